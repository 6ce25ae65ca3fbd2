/// A network condition: what each direction of the link does, plus an extra delay for DNS.
///
/// Downlink is traffic arriving at the interface, uplink traffic leaving it.
public struct Profile: Hashable, Sendable {
    /// Display name, e.g. `Slow Net`; unique within a catalog, matched case-insensitively.
    public var name: String
    public var description: String
    public var downlink: LinkConditions
    public var uplink: LinkConditions
    /// Added once to every DNS query leaving the host (port 53, UDP and TCP), on top of the uplink delay.
    public var dnsDelay: Delay
    /// What happens to connections through the condition besides shaping; `nil`: nothing.
    public var failure: ConnectionFailure?
    /// Lookups through the condition that fail (answered by linkcondd); `nil`: none.
    public var dnsFailure: DNSFailure?

    public init(
        name: String,
        description: String = "",
        downlink: LinkConditions = .unshaped,
        uplink: LinkConditions = .unshaped,
        dnsDelay: Delay = .zero,
        failure: ConnectionFailure? = nil,
        dnsFailure: DNSFailure? = nil
    ) {
        self.name = name
        self.description = description
        self.downlink = downlink
        self.uplink = uplink
        self.dnsDelay = dnsDelay
        self.failure = failure
        self.dnsFailure = dnsFailure
    }

    /// `down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms`, `failure: offline; down: …`.
    public var summary: String {
        var text = "down: \(downlink.summary); up: \(uplink.summary)"
        if !dnsDelay.isZero { text += "; dns: +\(dnsDelay)" }
        if let dnsFailure { text += "; dns: \(dnsFailure)" }
        if let failure { text = "failure: \(failure.rawValue); " + text }
        return text
    }

    /// The failures in force, as status and metrics name them: `offline`, `dns-nxdomain`,
    /// `refuse, dns-timeout`; `nil` when none.
    public var failureName: String? {
        let names = [failure?.rawValue, dnsFailure.map { "dns-\($0.kind.rawValue)" }].compactMap { $0 }
        return names.isEmpty ? nil : names.joined(separator: ", ")
    }

    /// Whether a direction follows a trace instead of a fixed rate.
    public var isTraceDriven: Bool {
        downlink.trace != nil || uplink.trace != nil
    }

    /// The same condition with no values changed: two profiles with equal conditions shape alike.
    public func hasSameConditions(as other: Profile) -> Bool {
        downlink == other.downlink && uplink == other.uplink && dnsDelay == other.dnsDelay && failure == other.failure && dnsFailure == other.dnsFailure
    }
}
