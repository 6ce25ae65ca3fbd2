import Shaping

/// One condition's counters, as read from the kernel at one moment.
package struct ConditionCounters: Sendable, Equatable {
    package var id: String
    package var profile: String?
    package var uplink: DirectionCounters
    package var downlink: DirectionCounters
}
