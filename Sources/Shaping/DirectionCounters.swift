import Netlink

/// One direction of a condition as the kernel counts it: its netem leaves, and the queues below
/// them where packets wait for the rate.
///
/// netem counts as its own drops both the packets its loss drops and those its queue refuses
/// for room; the queue counts only the latter. The profile's loss is the difference.
package struct DirectionCounters: Sendable, Equatable {
    /// The netem leaves' counters, summed: what they carried, dropped, and hold now (their
    /// queues' packets included).
    package var leaves: TrafficStatistics
    /// Dropped by the queues below the leaves, which were full.
    package var queueDrops: UInt64

    package static let zero = DirectionCounters(leaves: .zero, queueDrops: 0)

    package init(leaves: TrafficStatistics, queueDrops: UInt64) {
        self.leaves = leaves
        self.queueDrops = queueDrops
    }

    package var bytes: UInt64 { leaves.bytes }
    package var packets: UInt64 { leaves.packets }
    package var drops: UInt64 { leaves.drops }
    package var queuedPackets: UInt64 { leaves.queuedPackets }
    package var queuedBytes: UInt64 { leaves.queuedBytes }
    /// Dropped by netem itself: the profile's loss (and, should its delay line ever hold its
    /// limit, that overflow).
    package var lossDrops: UInt64 { leaves.drops - min(queueDrops, leaves.drops) }
}
