import Netlink

/// The fixed handles, classes and filter priorities linkcond uses on every device it shapes.
///
/// All majors are below `0x8000`, the range the kernel never auto-allocates, so a restarted
/// daemon recognises its own objects and never mistakes a foreign qdisc for one of its own.
public enum ReservedHandles {
    /// Root htb qdisc, on the interface (uplink) and on the IFB (downlink).
    public static let root = TrafficControlHandle(major: 0x7A00)
    /// Default class: ARP, ND, anything unmatched and the exemptions go here, unshaped.
    public static let exemptClass = TrafficControlHandle(major: 0x7A00, minor: 0x2)
    /// Parent of the shaped classes; its rate is the profile's bandwidth.
    public static let profileClass = TrafficControlHandle(major: 0x7A00, minor: 0x3)
    /// All shaped traffic but DNS queries.
    public static let bulkClass = TrafficControlHandle(major: 0x7A00, minor: 0x10)
    /// DNS queries leaving the host (uplink only).
    public static let dnsClass = TrafficControlHandle(major: 0x7A00, minor: 0x11)

    /// Leaf qdiscs, one per leaf class.
    public static let exemptLeaf = TrafficControlHandle(major: 0x7A02)
    public static let bulkLeaf = TrafficControlHandle(major: 0x7A10)
    public static let dnsLeaf = TrafficControlHandle(major: 0x7A11)

    /// The queue below each netem leaf: a pfifo holding the packets that wait for the class's
    /// rate, so that the packets a full queue drops are counted apart from those the profile's
    /// loss drops (netem counts both as its own drops).
    public static let bulkQueue = TrafficControlHandle(major: 0x7A20)
    public static let dnsQueue = TrafficControlHandle(major: 0x7A21)

    /// Every qdisc handle linkcond creates below a root it owns, the root included, but the
    /// leaves of matched conditions and their queues (`matchLeaf`, `matchQueue`).
    public static let qdiscs = [root, exemptLeaf, bulkLeaf, dnsLeaf, bulkQueue, dnsQueue]

    /// Slots of conditions with a match: 1 up to this. Slot `n` has the class `7a00:(4000+n)`,
    /// the leaf `(4000+n):` and its queue `(1000+n):`, all below the 0x8000 majors the kernel
    /// hands out.
    public static let maximumMatchSlot: UInt16 = 0x2FFF
    static let matchBase: UInt16 = 0x4000
    static let matchQueueBase: UInt16 = 0x1000

    public static func matchClass(_ slot: UInt16) -> TrafficControlHandle {
        TrafficControlHandle(major: root.major, minor: matchBase + slot)
    }

    public static func matchLeaf(_ slot: UInt16) -> TrafficControlHandle {
        TrafficControlHandle(major: matchBase + slot)
    }

    public static func matchQueue(_ slot: UInt16) -> TrafficControlHandle {
        TrafficControlHandle(major: matchQueueBase + slot)
    }

    /// Where a netem leaf's queue hangs: netem's one class, `leaf:1`.
    public static func queueParent(of leaf: TrafficControlHandle) -> TrafficControlHandle {
        TrafficControlHandle(major: leaf.major, minor: 1)
    }

    /// The queue below each netem leaf.
    public static func queue(below leaf: TrafficControlHandle) -> TrafficControlHandle? {
        switch leaf {
        case bulkLeaf: return bulkQueue
        case dnsLeaf: return dnsQueue
        default:
            guard leaf.minor == 0, (matchBase + 1...matchBase + maximumMatchSlot).contains(leaf.major) else { return nil }
            return matchQueue(leaf.major - matchBase)
        }
    }

    /// Whether a qdisc below linkcond's root is one linkcond creates.
    public static func isLinkcondQdisc(_ handle: TrafficControlHandle) -> Bool {
        guard !qdiscs.contains(handle) else { return true }
        guard handle.minor == 0 else { return false }
        return (matchBase + 1...matchBase + maximumMatchSlot).contains(handle.major)
            || (matchQueueBase + 1...matchQueueBase + maximumMatchSlot).contains(handle.major)
    }

    /// The first handle of a matched condition's filters; it has up to 256 (`slot << 8 | n`).
    static func matchFilterHandles(_ slot: UInt16) -> ClosedRange<UInt32> {
        UInt32(slot) << 8...UInt32(slot) << 8 | 0xFF
    }

    /// Filter priorities on the root htb; lower runs first. All are flower filters for every
    /// link-layer protocol, so one priority holds IPv4 and IPv6 alike.
    public enum Priority {
        /// SSH, DHCP, neighbour discovery and the exempt networks: before anything shapes.
        public static let exempt: UInt16 = 1
        /// Matched conditions, the most specific first: `matches.lowerBound` for a full-length
        /// address with a port, up to `matches.upperBound` for any address without one.
        public static let matches: ClosedRange<UInt16> = 0x100...0x100 + UInt16(PeerMatch.maximumSpecificity)
        /// The whole-interface condition's DNS queries, then the rest of its traffic.
        public static let dns: UInt16 = 0x300
        public static let all: UInt16 = 0x301
    }

    /// Filter priorities on the interface's ingress qdisc (redirects to the IFB).
    ///
    /// A VLAN-tagged frame arrives with its tag taken off into the packet's metadata, where a
    /// filter's protocol is the tag's (802.1Q, 802.1ad), not the IP version inside: without their
    /// own redirects, tagged IPv4 and IPv6 would skip the downlink. On the IFB, flower reads past
    /// the tag, and the same filters classify tagged and untagged packets.
    public enum IngressPriority {
        public static let ipv4: UInt16 = 1
        public static let ipv6: UInt16 = 2
        public static let vlan: UInt16 = 3
        public static let qinq: UInt16 = 4

        /// Each redirect's protocol and priority.
        public static let redirects: [(protocolType: EthernetProtocol, priority: UInt16)] = [
            (.ipv4, ipv4), (.ipv6, ipv6), (.vlan, vlan), (.qinq, qinq),
        ]
    }

    /// Every device's ingress qdisc has this handle; ours is told apart by its redirect filters.
    public static let ingress = TrafficControlHandle.ingress
}
