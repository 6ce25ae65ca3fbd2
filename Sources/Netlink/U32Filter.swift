/// One u32 selector key: `(word at offset) & mask == value`, offsets from the network header.
///
/// Values are host byte order here; they are swapped to network order on the wire.
public struct U32Key: Hashable, Sendable {
    /// Byte offset of a 32-bit aligned word.
    public var offset: Int32
    public var value: UInt32
    public var mask: UInt32

    public init(offset: Int32, value: UInt32, mask: UInt32) {
        precondition(offset % 4 == 0, "u32 keys address aligned 32-bit words")
        self.offset = offset
        self.value = value & mask
        self.mask = mask
    }
}

/// What a matching u32 filter does with the packet.
public enum U32Action: Hashable, Sendable {
    /// Put it in this class of the qdisc the filter hangs from.
    case classify(TrafficControlHandle)
    /// Steal it and send it out of the device with this index (act_mirred egress redirect).
    case redirect(toInterfaceIndex: Int32)
}

/// A u32 filter node.
///
/// The kernel numbers the node: u32 hash-table ids are shared by all priorities of a qdisc and
/// handed out in creation order, so a fixed handle cannot be chosen up front. A filter is found
/// again by its priority, which linkcond fixes.
public struct U32Filter: Hashable, Sendable {
    public var priority: UInt16
    public var protocolType: EthernetProtocol
    /// All keys must match; an empty list matches every packet of `protocolType`.
    public var keys: [U32Key]
    public var action: U32Action

    public init(priority: UInt16, protocolType: EthernetProtocol, keys: [U32Key], action: U32Action) {
        self.priority = priority
        self.protocolType = protocolType
        self.keys = keys
        self.action = action
    }

    /// The keys as sent to the kernel: u32 needs at least one key, so a filter that matches
    /// every packet of its protocol carries one that matches anything.
    public var wireKeys: [U32Key] {
        keys.isEmpty ? [Self.matchAll] : keys
    }

    static let matchAll = U32Key(offset: 0, value: 0, mask: 0)
}
