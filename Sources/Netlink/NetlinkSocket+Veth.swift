import CNetlink
import Glibc

extension NetlinkSocket {
    /// Creates a veth pair: `name` here, `peerName` in the network namespace `peerNamespace`,
    /// in one request, so that no half of the pair ever sits in the wrong namespace. Both ends
    /// are down. Fails if a device called `name` exists here.
    public func addVethPair(named name: String, peer peerName: String, peerNamespace: NetworkNamespaceFile) throws(NetlinkError) {
        let link = try NetlinkObject(allocating: { rtnl_link_veth_alloc() }, what: "veth pair")
        rtnl_link_set_name(link.pointer, name)
        // Borrowed: released with the pair.
        guard let peer = rtnl_link_veth_get_peer(link.pointer) else {
            throw NetlinkError(code: .other, operation: "create veth pair \(name)", reason: "libnl made no peer")
        }
        rtnl_link_set_name(peer, peerName)
        rtnl_link_set_ns_fd(peer, peerNamespace.descriptor)
        defer { rtnl_link_put(peer) }
        try perform("create veth pair \(name) (peer \(peerName) in \(peerNamespace.path))") {
            rtnl_link_add($0, link.pointer, NLM_F_CREATE | NLM_F_EXCL)
        }
    }

    /// Brings the device `name` up.
    public func setUp(_ name: String) throws(NetlinkError) {
        try change(name, "bring \(name) up") { rtnl_link_set_flags($0, UInt32(IFF_UP)) }
    }

    public func setDown(_ name: String) throws(NetlinkError) {
        try change(name, "bring \(name) down") { rtnl_link_unset_flags($0, UInt32(IFF_UP)) }
    }

    /// Whether IPv4 packets arriving on `name` may be forwarded (its `forwarding` setting).
    public func ipv4Forwarding(on name: String) throws(NetlinkError) -> Bool {
        var pointer: OpaquePointer?
        try perform("read the IPv4 settings of \(name)") { rtnl_link_get_kernel($0, 0, name, &pointer) }
        guard let pointer else { throw NetlinkError(code: .noSuchDevice, operation: "read the IPv4 settings of \(name)", reason: "no such device") }
        let link = NetlinkObject(pointer)
        var value: UInt32 = 0
        try perform("read the IPv4 forwarding setting of \(name)") { _ in
            rtnl_link_inet_get_conf(link.pointer, UInt32(IPV4_DEVCONF_FORWARDING), &value)
        }
        return value != 0
    }

    /// Sets `name`'s IPv4 `forwarding`, through the link's own settings: `/proc/sys` may be
    /// read-only for the daemon (systemd's ProtectKernelTunables).
    public func setIPv4Forwarding(_ on: Bool, on name: String) throws(NetlinkError) {
        try change(name, "set IPv4 forwarding \(on ? "on" : "off") on \(name)") {
            rtnl_link_inet_set_conf($0, UInt32(IPV4_DEVCONF_FORWARDING), on ? 1 : 0)
        }
    }

    /// The names of every device in this socket's network namespace.
    public func linkNames() throws(NetlinkError) -> [String] {
        var cachePointer: OpaquePointer?
        try perform("list links") { rtnl_link_alloc_cache($0, AF_UNSPEC, &cachePointer) }
        guard let cachePointer else { return [] }
        let cache = NetlinkCache(cachePointer)
        return cache.objects.map { String(cString: rtnl_link_get_name($0)) }
    }

    /// Applies `edit` to a change request for the device `name`.
    private func change(_ name: String, _ operation: String, _ edit: (OpaquePointer) -> Void) throws(NetlinkError) {
        guard let existing = try link(named: name) else {
            throw NetlinkError(code: .noSuchDevice, operation: operation, reason: "no such device")
        }
        let original = try NetlinkObject(allocating: { rtnl_link_alloc() }, what: "link")
        rtnl_link_set_ifindex(original.pointer, existing.index)
        let changes = try NetlinkObject(allocating: { rtnl_link_alloc() }, what: "link")
        edit(changes.pointer)
        try perform(operation) { rtnl_link_change($0, original.pointer, changes.pointer, 0) }
    }
}
