import Shaping

/// One condition's counters, as read from the kernel at one moment.
package struct ConditionCounters: Sendable, Equatable {
    package var id: String
    package var profile: String?
    package var uplink: DirectionCounters
    package var downlink: DirectionCounters
    /// The failure in force (`offline`, `refuse`), and what it refused or dropped, in packets.
    package var failure: String? = nil
    package var failedPackets: UInt64? = nil
}
