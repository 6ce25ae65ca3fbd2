import CNetlink

/// A qdisc's or class's counters as the kernel keeps them (`tc -s`).
public struct TrafficStatistics: Sendable, Equatable, Codable {
    public var packets: UInt64
    public var bytes: UInt64
    public var drops: UInt64
    public var overlimits: UInt64
    /// Packets and bytes waiting in the queue now.
    public var queuedPackets: UInt64
    public var queuedBytes: UInt64

    public init(packets: UInt64, bytes: UInt64, drops: UInt64, overlimits: UInt64, queuedPackets: UInt64, queuedBytes: UInt64) {
        self.packets = packets
        self.bytes = bytes
        self.drops = drops
        self.overlimits = overlimits
        self.queuedPackets = queuedPackets
        self.queuedBytes = queuedBytes
    }

    /// Read from a qdisc or class of a libnl cache.
    init(_ object: OpaquePointer) {
        self.init(
            packets: rtnl_tc_get_stat(object, RTNL_TC_PACKETS),
            bytes: rtnl_tc_get_stat(object, RTNL_TC_BYTES),
            drops: rtnl_tc_get_stat(object, RTNL_TC_DROPS),
            overlimits: rtnl_tc_get_stat(object, RTNL_TC_OVERLIMITS),
            queuedPackets: rtnl_tc_get_stat(object, RTNL_TC_QLEN),
            queuedBytes: rtnl_tc_get_stat(object, RTNL_TC_BACKLOG)
        )
    }
}

extension TrafficStatistics {
    public static let zero = TrafficStatistics(packets: 0, bytes: 0, drops: 0, overlimits: 0, queuedPackets: 0, queuedBytes: 0)

    /// Two objects' counters together: the leaves one direction of a condition sends through.
    public static func + (left: TrafficStatistics, right: TrafficStatistics) -> TrafficStatistics {
        TrafficStatistics(
            packets: left.packets &+ right.packets, bytes: left.bytes &+ right.bytes, drops: left.drops &+ right.drops,
            overlimits: left.overlimits &+ right.overlimits, queuedPackets: left.queuedPackets &+ right.queuedPackets,
            queuedBytes: left.queuedBytes &+ right.queuedBytes
        )
    }
}
