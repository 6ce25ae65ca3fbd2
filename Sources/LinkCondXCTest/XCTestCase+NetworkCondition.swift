@_exported import LinkCondClient
import XCTest

extension XCTestCase {
    /// Runs `body` under a linkcond profile, held by a client-bound lease that ends when `body`
    /// returns or throws, or when the test process dies.
    ///
    /// ```swift
    /// func testSpinnerShows() async throws {
    ///     try await withNetworkCondition("Slow Net") { … }
    /// }
    /// ```
    ///
    /// Throws, failing the test, if the profile could not be put in force (`body` then does not
    /// run) or ended before `body` returned (`ConditionInterrupted`).
    ///
    /// - Parameters:
    ///   - profile: A profile's name (`"Slow Net"`, `"Black Hole"`).
    ///   - condition: A condition's id (`"eth1"`, `"netns/app/eth0"`); `nil` for the daemon's
    ///     default interface.
    ///   - maximum: The longest the profile may hold.
    ///   - socketPath: The daemon's socket; `nil` for `$LINKCOND_SOCKET`, else the default.
    public func withNetworkCondition<Result: Sendable>(
        _ profile: String,
        on condition: String? = nil,
        atMost maximum: Duration? = .seconds(600),
        socketPath: String? = nil,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let client = socketPath.map(ControlClient.init(socketPath:)) ?? ControlClient()
        return try await client.withCondition(profile, on: condition, atMost: maximum, body)
    }
}
