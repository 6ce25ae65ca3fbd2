@_exported import LinkCondClient
import Testing

/// Runs a test, or a whole suite, under a linkcond profile: `@Test(.networkCondition("Slow Net"))`.
///
/// The profile is held by a client-bound lease for exactly as long as the test (or suite) runs,
/// and comes off when it ends, fails, or its process dies. If it cannot be put in force (no
/// daemon, no permission, no such profile, another client's lease), the test fails without
/// running; if it ends early (expired, taken over, daemon stopped), the test fails after running.
///
/// One condition holds one profile at a time: tests that ask for different profiles on the same
/// condition must not run at once. Put them in a `.serialized` suite, or give the suite the trait.
public struct NetworkConditionTrait: TestTrait, SuiteTrait, TestScoping {
    /// The profile's name, as `linkcond list` shows it.
    public var profile: String
    /// A condition's id as `linkcond status` shows it; `nil` for the daemon's default interface.
    public var condition: String?
    /// The longest the profile may hold, in case the test hangs.
    public var maximum: Duration?
    /// The daemon's socket; `nil` for `$LINKCOND_SOCKET`, else the default.
    public var socketPath: String?

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let client = socketPath.map(ControlClient.init(socketPath:)) ?? ControlClient()
        try await client.withCondition(profile, on: condition, atMost: maximum) {
            try await function()
        }
    }
}

extension Trait where Self == NetworkConditionTrait {
    /// Runs the test, or the suite, under `profile`; see `NetworkConditionTrait`.
    ///
    /// - Parameters:
    ///   - profile: A profile's name (`"Slow Net"`, `"Black Hole"`).
    ///   - condition: A condition's id (`"eth1"`, `"netns/app/eth0"`); `nil` for the daemon's
    ///     default interface.
    ///   - maximum: The longest the profile may hold.
    ///   - socketPath: The daemon's socket; `nil` for `$LINKCOND_SOCKET`, else the default.
    public static func networkCondition(
        _ profile: String,
        on condition: String? = nil,
        atMost maximum: Duration? = .seconds(600),
        socketPath: String? = nil
    ) -> Self {
        NetworkConditionTrait(profile: profile, condition: condition, maximum: maximum, socketPath: socketPath)
    }
}
