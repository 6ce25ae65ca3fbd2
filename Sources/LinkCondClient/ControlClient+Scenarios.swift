import ControlAPI

extension ControlClient {
    /// Every scenario the daemon can play, and the files it skipped.
    public func scenarios() async throws(ControlClientError) -> ScenarioListResponse {
        try await request(.GET, APIPath.scenarios)
    }

    /// Plays a scenario on `condition` (the daemon's own when `nil`); with `duration`, as a
    /// lease that reverts by itself, scenario and all.
    public func play(
        _ scenario: String, for duration: String? = nil, force: Bool = false, replaceForeign: Bool = false, condition: String? = nil
    ) async throws(ControlClientError) -> StatusResponse {
        try await request(.PUT, condition.map(APIPath.condition) ?? APIPath.condition, body: ActivateRequest(
            scenario: scenario, replaceForeign: replaceForeign ? true : nil, for: duration, force: force ? true : nil
        ))
    }

    /// Moves the scenario playing on `condition` on to its next step now.
    public func next(condition: String? = nil) async throws(ControlClientError) -> StatusResponse {
        try await request(.POST, condition.map(APIPath.conditionNext) ?? APIPath.conditionNext)
    }
}
