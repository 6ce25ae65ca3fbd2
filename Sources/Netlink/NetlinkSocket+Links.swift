import CNetlink
import Glibc

/// What linkcond needs to know about a network device.
public struct LinkInfo: Sendable, Equatable {
    public var index: Int32
    public var name: String
    /// The `rtnl_link_ops` kind (`ifb`, `veth`, ...); `nil` for physical devices.
    public var kind: String?
    public var isUp: Bool
    /// Whether its operational state is up (IFF_RUNNING): set by the kernel's link watch, which
    /// follows a change of carrier a moment later (up to a second) and flags the routes then.
    public var isRunning: Bool
    public var mtu: UInt32
    /// A veth's other end, by its index in its own namespace (IFLA_LINK); `nil` when none is said.
    public var peerIndex: Int32?
    /// Its link-layer address (IFLA_ADDRESS): six bytes on Ethernet and veth, zeros on loopback.
    public var hardwareAddress: [UInt8]

    public init(index: Int32, name: String, kind: String?, isUp: Bool, isRunning: Bool? = nil, mtu: UInt32, peerIndex: Int32? = nil, hardwareAddress: [UInt8] = []) {
        self.index = index
        self.name = name
        self.kind = kind
        self.isUp = isUp
        self.isRunning = isRunning ?? isUp
        self.mtu = mtu
        self.peerIndex = peerIndex
        self.hardwareAddress = hardwareAddress
    }
}

extension NetlinkSocket {
    /// The device called `name`, or `nil` when there is none.
    public func link(named name: String) throws(NetlinkError) -> LinkInfo? {
        try link(index: 0, name: name, what: name)
    }

    /// The device with index `index`, or `nil` when there is none.
    public func link(index: Int32) throws(NetlinkError) -> LinkInfo? {
        try link(index: index, name: nil, what: "number \(index)")
    }

    private func link(index: Int32, name: String?, what: String) throws(NetlinkError) -> LinkInfo? {
        var pointer: OpaquePointer?
        do {
            try perform("look up link \(what)") { rtnl_link_get_kernel($0, index, name, &pointer) }
        } catch where error.code == .noSuchDevice || error.code == .notFound {
            return nil
        }
        guard let pointer else { return nil }
        let link = NetlinkObject(pointer)
        let peer = rtnl_link_get_link(link.pointer)
        var hardwareAddress: [UInt8] = []
        if let address = rtnl_link_get_addr(link.pointer), let bytes = nl_addr_get_binary_addr(address) {
            hardwareAddress = Array(UnsafeRawBufferPointer(start: bytes, count: Int(nl_addr_get_len(address))))
        }
        return LinkInfo(
            index: rtnl_link_get_ifindex(link.pointer),
            name: String(cString: rtnl_link_get_name(link.pointer)),
            kind: rtnl_link_get_type(link.pointer).map { String(cString: $0) },
            isUp: rtnl_link_get_flags(link.pointer) & UInt32(IFF_UP) != 0,
            isRunning: rtnl_link_get_flags(link.pointer) & UInt32(IFF_RUNNING) != 0,
            mtu: rtnl_link_get_mtu(link.pointer),
            peerIndex: peer > 0 ? peer : nil,
            hardwareAddress: hardwareAddress
        )
    }

    /// Creates an IFB device called `name`, already up. Fails if a device of that name exists.
    public func addIntermediateFunctionalBlock(named name: String) throws(NetlinkError) {
        let link = try NetlinkObject(allocating: { rtnl_link_alloc() }, what: "link")
        rtnl_link_set_name(link.pointer, name)
        try perform("create ifb device \(name)") { _ in rtnl_link_set_type(link.pointer, "ifb") }
        rtnl_link_set_flags(link.pointer, UInt32(IFF_UP))
        try perform("create ifb device \(name)") {
            rtnl_link_add($0, link.pointer, NLM_F_CREATE | NLM_F_EXCL)
        }
    }

    /// Deletes the device called `name`.
    public func deleteLink(named name: String) throws(NetlinkError) {
        let link = try NetlinkObject(allocating: { rtnl_link_alloc() }, what: "link")
        rtnl_link_set_name(link.pointer, name)
        try perform("delete device \(name)") { rtnl_link_delete($0, link.pointer) }
    }
}
