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

    /// Every qdisc handle linkcond creates below a root it owns, the root included.
    public static let qdiscs = [root, exemptLeaf, bulkLeaf, dnsLeaf]

    /// Filter priorities on the root htb; lower runs first. One protocol per priority.
    public enum Priority {
        public static let exemptIPv4: UInt16 = 1
        public static let exemptIPv6: UInt16 = 2
        public static let dnsIPv4: UInt16 = 3
        public static let dnsIPv6: UInt16 = 4
        public static let allIPv4: UInt16 = 5
        public static let allIPv6: UInt16 = 6
    }

    /// Filter priorities on the interface's ingress qdisc (redirects to the IFB).
    public enum IngressPriority {
        public static let ipv4: UInt16 = 1
        public static let ipv6: UInt16 = 2
    }

    /// Every device's ingress qdisc has this handle; ours is told apart by its redirect filters.
    public static let ingress = TrafficControlHandle.ingress
}
