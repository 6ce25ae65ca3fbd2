import ControlAPI

extension ControlClient {
    /// Resets the TCP connections of `condition` (the daemon's own when `nil`) now: each fails at
    /// once in the app, and its far end sees a reset. `force` resets them while another client
    /// holds a lease on the condition.
    public func reset(force: Bool = false, condition: String? = nil) async throws(ControlClientError) -> ResetResponse {
        try await request(.POST, (condition.map(APIPath.conditionReset) ?? APIPath.conditionReset) + (force ? "?force=1" : ""))
    }
}
