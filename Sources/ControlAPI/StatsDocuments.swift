/// `GET /v1/stats`: what each condition's shaping has done, from the kernel's own counters.
public struct StatsResponse: Codable, Sendable, Equatable {
    /// When the counters were read, ISO 8601 UTC.
    public var at: String
    /// Every condition that has objects in the kernel, the default one first.
    public var conditions: [ConditionStatsDocument]

    public init(at: String, conditions: [ConditionStatsDocument]) {
        self.at = at
        self.conditions = conditions
    }
}

/// One condition's counters, per direction.
public struct ConditionStatsDocument: Codable, Sendable, Equatable {
    /// The condition's id, as `GET /v1/conditions` gives it.
    public var id: String
    /// The profile in force, `nil` when the condition is off.
    public var profile: String?
    /// Traffic leaving through the interface, and traffic arriving on it. `nil` when the
    /// condition has no objects in the kernel (it is off).
    public var uplink: DirectionStatsDocument?
    public var downlink: DirectionStatsDocument?
    /// The failures in force (`offline`, `refuse`, `dns-nxdomain`, `dns-servfail`, `dns-timeout`, comma-separated), absent when none.
    public var failure: String?
    /// Packets the failure refused (answered with an error) or dropped, since it came into force.
    public var failedPackets: UInt64?

    public init(
        id: String, profile: String?, uplink: DirectionStatsDocument?, downlink: DirectionStatsDocument?,
        failure: String? = nil, failedPackets: UInt64? = nil
    ) {
        self.id = id
        self.profile = profile
        self.uplink = uplink
        self.downlink = downlink
        self.failure = failure
        self.failedPackets = failedPackets
    }
}

/// A direction's counters since its objects were made (a switch in place keeps them; a
/// condition switched off and on again starts from zero).
public struct DirectionStatsDocument: Codable, Sendable, Equatable {
    /// Carried through the profile: delayed, and sent on at its rate.
    public var bytes: UInt64
    public var packets: UInt64
    /// Dropped, for either reason below: their sum, which the initializer derives.
    public var droppedPackets: UInt64
    /// Dropped by the profile's loss (netem's own drops, less its queue's).
    public var droppedByLoss: UInt64
    /// Dropped because the queue where packets wait for the profile's rate was full.
    public var droppedByQueue: UInt64
    /// Waiting in the profile's queue now: in its delay line, or behind its rate.
    public var queuedPackets: UInt64
    public var queuedBytes: UInt64
    /// Over the time since the previous `GET /v1/stats` (by anyone) when that was at most 60 s
    /// before; `nil` otherwise. The daemon keeps no timer: a rate needs two reads.
    public var bitsPerSecond: Double?
    public var packetsPerSecond: Double?
    public var droppedPerSecond: Double?

    public init(
        bytes: UInt64, packets: UInt64, droppedByLoss: UInt64 = 0, droppedByQueue: UInt64 = 0,
        queuedPackets: UInt64, queuedBytes: UInt64,
        bitsPerSecond: Double? = nil, packetsPerSecond: Double? = nil, droppedPerSecond: Double? = nil
    ) {
        self.bytes = bytes
        self.packets = packets
        self.droppedPackets = droppedByLoss + droppedByQueue
        self.droppedByLoss = droppedByLoss
        self.droppedByQueue = droppedByQueue
        self.queuedPackets = queuedPackets
        self.queuedBytes = queuedBytes
        self.bitsPerSecond = bitsPerSecond
        self.packetsPerSecond = packetsPerSecond
        self.droppedPerSecond = droppedPerSecond
    }
}
