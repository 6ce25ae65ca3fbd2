/// A cls_flower filter as linkcond sends it: keys the kernel's flow dissector fills in (it
/// walks IPv4 options, IPv6 extension headers and VLAN tags, which fixed u32 offsets cannot),
/// a fixed handle so that the filter can be replaced and deleted on its own, and the class it
/// puts matching packets in.
///
/// Always attached for every link-layer protocol (`ETH_P_ALL`): a filter attached for IPv4
/// alone never sees VLAN-tagged frames, whose outer protocol is 802.1Q. The IP version is
/// then a key (`etherType`), which the dissector reads behind any tags.
public struct FlowerFilter: Hashable, Sendable {
    public var priority: UInt16
    public var handle: UInt32
    public var key: FlowerKey
    public var classID: TrafficControlHandle

    public init(priority: UInt16, handle: UInt32, key: FlowerKey, classID: TrafficControlHandle) {
        self.priority = priority
        self.handle = handle
        self.key = key
        self.classID = classID
    }
}

/// What a flower filter matches, all keys at once. Keys the kernel would silently ignore are
/// not representable: transport ports need `ipProtocol` TCP or UDP, ICMPv6 types need 58.
public struct FlowerKey: Hashable, Sendable {
    /// IPv4 or IPv6; flower without it matches every frame.
    public var etherType: EthernetProtocol
    public var ipProtocol: UInt8?
    public var source: FlowerAddress?
    public var destination: FlowerAddress?
    /// Set only with `ipProtocol` 6 or 17.
    public var sourcePort: UInt16?
    public var destinationPort: UInt16?
    /// ICMPv6 type and mask, set only with `ipProtocol` 58.
    public var icmpv6Type: (value: UInt8, mask: UInt8)? {
        get { icmpv6TypeValue.map { ($0, icmpv6TypeMask) } }
        set {
            icmpv6TypeValue = newValue?.value
            icmpv6TypeMask = newValue?.mask ?? 0
        }
    }
    private var icmpv6TypeValue: UInt8?
    private var icmpv6TypeMask: UInt8 = 0

    public init(
        etherType: EthernetProtocol, ipProtocol: UInt8? = nil, source: FlowerAddress? = nil, destination: FlowerAddress? = nil,
        sourcePort: UInt16? = nil, destinationPort: UInt16? = nil
    ) {
        self.etherType = etherType
        self.ipProtocol = ipProtocol
        self.source = source
        self.destination = destination
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
    }

    /// Whether every key is one the kernel honours: ports only with TCP or UDP, ICMPv6 types
    /// only with ICMPv6 over IPv6, addresses of the filter's IP version.
    public var isConsistent: Bool {
        let addressLength = etherType == .ipv4 ? 4 : 16
        guard etherType == .ipv4 || etherType == .ipv6 else { return false }
        guard [source, destination].allSatisfy({ $0 == nil || $0!.address.count == addressLength }) else { return false }
        if sourcePort != nil || destinationPort != nil, ipProtocol != 6 && ipProtocol != 17 { return false }
        if icmpv6TypeValue != nil, etherType != .ipv6 || ipProtocol != 58 { return false }
        return true
    }
}

/// An address and how many leading bits of it a filter compares.
public struct FlowerAddress: Hashable, Sendable {
    /// Network-order bytes: 4 or 16.
    public var address: [UInt8]
    public var prefixLength: Int

    public init(address: [UInt8], prefixLength: Int) {
        precondition(address.count == 4 || address.count == 16, "an IPv4 or IPv6 address")
        precondition((0...address.count * 8).contains(prefixLength), "a prefix within the address")
        self.address = address
        self.prefixLength = prefixLength
    }

    /// The mask as the kernel takes it: `prefixLength` one bits, then zeros.
    public var mask: [UInt8] {
        (0..<address.count).map { index in
            let bits = max(0, min(8, prefixLength - index * 8))
            return bits == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}
