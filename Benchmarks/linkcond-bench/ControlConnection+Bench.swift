import ControlAPI
import ControlClient

extension ControlConnection {
    /// Activates `profile` (or turns shaping off for `off`) and fails on anything but 200.
    func activate(_ profile: String) async throws {
        if profile == "off" {
            _ = try await request(.DELETE, APIPath.condition) as StatusResponse
        } else {
            _ = try await request(.PUT, APIPath.condition, body: ActivateRequest(profile: profile)) as StatusResponse
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
