import ControlAPI
import LinkCondClient

/// What the console asks of the daemon: the control API's calls it uses, each failing with the
/// client's error (the daemon's own code and message, when it answered with one).
public protocol ConsoleBackend: Sendable {
    func conditions() async throws(ControlClientError) -> ConditionListResponse
    func stats() async throws(ControlClientError) -> StatsResponse
    func profiles() async throws(ControlClientError) -> ProfileListResponse
    func profile(named name: String) async throws(ControlClientError) -> ProfileDocument
    func history(limit: Int) async throws(ControlClientError) -> HistoryResponse
    func activate(_ profile: String, condition: String) async throws(ControlClientError) -> StatusResponse
    func deactivate(condition: String) async throws(ControlClientError) -> StatusResponse
    func saveProfile(_ definition: ProfileDefinition, replace: Bool) async throws(ControlClientError) -> ProfileDocument
    func deleteProfile(named name: String) async throws(ControlClientError) -> ProfileDocument
}

extension ControlClient: ConsoleBackend {
    public func conditions() async throws(ControlClientError) -> ConditionListResponse {
        try await conditions(verbose: false)
    }

    public func activate(_ profile: String, condition: String) async throws(ControlClientError) -> StatusResponse {
        try await activate(profile, definition: nil, condition: condition)
    }

    public func deactivate(condition: String) async throws(ControlClientError) -> StatusResponse {
        try await deactivate(force: false, condition: condition)
    }
}
