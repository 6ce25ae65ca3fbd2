/// A condition that `withCondition` held ended before its body returned: it expired, another
/// client took it over with `force`, the daemon stopped, or the connection to it broke. The body
/// ran to its end all the same, but not all of it under the condition, so its result is not
/// given back: a test that asked for a network must not pass on another one.
public struct ConditionInterrupted: Error, Sendable, CustomStringConvertible {
    /// The profile that was asked for.
    public var profile: String
    /// How the lease ended, as far as the client could tell.
    public var outcome: LeaseOutcome

    public init(profile: String, outcome: LeaseOutcome) {
        self.profile = profile
        self.outcome = outcome
    }

    public var description: String {
        switch outcome {
        case .ended(let event):
            "\(profile) ended before the code under it returned: \(event.reason?.rawValue ?? "ended")"
        case .connectionLost(let reason):
            "the connection to linkcondd broke while \(profile) was held (\(reason)); the daemon may have stopped"
        }
    }
}
