/// What a condition does to its target's connections beyond shaping their packets: the failures
/// apps meet on a phone (airplane mode, a server that is down), put in force in the kernel.
public enum ConnectionFailure: String, Hashable, Sendable, CaseIterable {
    /// No network at all: new connections fail at once with "network unreachable", established
    /// ones on their next use, nothing arrives.
    case offline
    /// The server is down: a connection is refused (a TCP reset to its SYN, an ICMP port
    /// unreachable to a datagram), and an established one is reset on its next segment.
    case refuse
    /// The link is down, as Wi-Fi dropping out: a sandbox's or a namespace's interface loses its
    /// carrier, its routes stop being used (new connections fail with "network unreachable"),
    /// the app's network-change events fire; when the failure ends, everything returns.
    case linkDown = "link-down"

    /// Reads a profile's `failure:` value.
    public init(parsing text: String) throws(UnitParseError) {
        guard let failure = ConnectionFailure(rawValue: text.trimmingSpaces().lowercased()) else {
            let known = Self.allCases.map(\.rawValue).joined(separator: ", ")
            throw UnitParseError("'\(text)' is not a failure linkcond knows; write \(known)")
        }
        self = failure
    }

    /// Whether it is put in force by nftables rules (the link's state otherwise).
    public var hasRules: Bool { self != .linkDown }

    /// How status and history name it: `offline (network unreachable)`.
    public var summary: String {
        switch self {
        case .offline: "offline (network unreachable)"
        case .refuse: "refuse (connections refused)"
        case .linkDown: "link-down (the link is down)"
        }
    }
}
