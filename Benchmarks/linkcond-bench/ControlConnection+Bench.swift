import ControlAPI
import Foundation
import LinkCondClient

extension ControlConnection {
    /// Activates `profile` (or turns shaping off for `off`) on `condition` (the default one for
    /// `nil`) and fails on anything but 200.
    func activate(_ profile: String, condition: String? = nil) async throws {
        let path = condition.map(APIPath.condition) ?? APIPath.condition
        if profile == "off" {
            _ = try await request(.DELETE, path) as StatusResponse
        } else {
            _ = try await request(.PUT, path, body: ActivateRequest(profile: profile)) as StatusResponse
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A benchmark's rows as indented JSON in the file `--out` names, if it names one.
func writeRows(_ rows: some Encodable, to path: String?) throws {
    guard let path else { return }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
    try encoder.encode(rows).write(to: URL(fileURLWithPath: path))
}
