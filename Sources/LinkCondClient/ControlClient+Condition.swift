@_exported import ControlAPI

extension ControlClient {
    /// Runs `body` under the profile `profile`, then puts back whatever condition was there.
    ///
    /// The profile is held by a client-bound lease: it ends when `body` returns or throws, and
    /// also if this process dies, so a crashed test run leaves no network shaped behind it.
    ///
    /// - Parameters:
    ///   - profile: A profile's name, as `linkcond list` shows it (`"Slow Net"`).
    ///   - condition: Which condition: `nil` for the daemon's default interface, or a condition's
    ///     id as `linkcond status` shows it (`"eth1"`, `"netns/app/eth0"`, `"lo:8080"`).
    ///   - maximum: The longest the profile may hold even if `body` has not returned.
    ///   - force: Take over a lease another client holds on that condition instead of failing.
    /// - Throws: `ControlClientError` when the profile could not be put in force (the daemon is
    ///   not running, the caller is not in its group, no such profile, another client's lease);
    ///   `body` then does not run. `ConditionInterrupted` when the profile ended before `body`
    ///   returned. Whatever `body` throws.
    public func withCondition<Result: Sendable>(
        _ profile: String,
        on condition: String? = nil,
        atMost maximum: Duration? = nil,
        force: Bool = false,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let request = LeaseRequest(
            profile: profile,
            for: maximum.map(Self.leaseText),
            force: force ? true : nil,
            condition: condition
        )
        let (result, outcome) = try await withLease(request, interrupted: { _ in }) { _ in
            try await body()
        }
        if case .ended(let event) = outcome, event.reason == .released {
            return result
        }
        throw ConditionInterrupted(profile: profile, outcome: outcome)
    }

    /// A `Duration` as the API writes lease lengths: whole milliseconds, at least one.
    static func leaseText(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return "\(max(milliseconds, 1))ms"
    }
}
