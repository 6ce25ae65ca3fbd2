import CNetlink
import Glibc

extension NetlinkSocket {
    /// Gives the device `name` the IPv4 address `address` (network order) on a network of
    /// `prefixLength` bits.
    public func addIPv4Address(_ address: [UInt8], prefixLength: Int, to name: String) throws(NetlinkError) {
        let operation = "add address \(address.map(String.init).joined(separator: "."))/\(prefixLength) to \(name)"
        guard let link = try link(named: name) else { throw NetlinkError(code: .noSuchDevice, operation: operation, reason: "no such device") }
        let object = try NetlinkObject(allocating: { rtnl_addr_alloc() }, what: "address")
        let local = try Self.address(address, prefixLength: prefixLength, operation: operation)
        defer { nl_addr_put(local) }
        rtnl_addr_set_ifindex(object.pointer, link.index)
        rtnl_addr_set_family(object.pointer, AF_INET)
        try perform(operation) { _ in rtnl_addr_set_local(object.pointer, local) }
        try perform(operation) { rtnl_addr_add($0, object.pointer, NLM_F_CREATE | NLM_F_EXCL) }
    }

    /// Adds the IPv4 default route through `gateway` on the device `name`.
    public func addIPv4DefaultRoute(via gateway: [UInt8], on name: String) throws(NetlinkError) {
        let operation = "add the default route via \(gateway.map(String.init).joined(separator: ".")) on \(name)"
        guard let link = try link(named: name) else { throw NetlinkError(code: .noSuchDevice, operation: operation, reason: "no such device") }
        let route = try NetlinkObject(allocating: { rtnl_route_alloc() }, what: "route")
        let anywhere = try Self.address([0, 0, 0, 0], prefixLength: 0, operation: operation)
        defer { nl_addr_put(anywhere) }
        let via = try Self.address(gateway, prefixLength: 32, operation: operation)
        defer { nl_addr_put(via) }
        rtnl_route_set_family(route.pointer, UInt8(AF_INET))
        rtnl_route_set_table(route.pointer, UInt32(RT_TABLE_MAIN.rawValue))
        rtnl_route_set_protocol(route.pointer, UInt8(RTPROT_STATIC))
        rtnl_route_set_scope(route.pointer, UInt8(RT_SCOPE_UNIVERSE.rawValue))
        rtnl_route_set_type(route.pointer, UInt8(RTN_UNICAST))
        try perform(operation) { _ in rtnl_route_set_dst(route.pointer, anywhere) }
        guard let hop = rtnl_route_nh_alloc() else { throw NetlinkError(code: .other, operation: operation, reason: "out of memory") }
        rtnl_route_nh_set_ifindex(hop, link.index)
        rtnl_route_nh_set_gateway(hop, via)
        // The route owns the next hop from here.
        rtnl_route_add_nexthop(route.pointer, hop)
        try perform(operation) { rtnl_route_add($0, route.pointer, NLM_F_CREATE | NLM_F_EXCL) }
    }

    private static func address(_ bytes: [UInt8], prefixLength: Int, operation: String) throws(NetlinkError) -> OpaquePointer {
        let built = bytes.withUnsafeBytes { nl_addr_build(bytes.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, $0.count) }
        guard let built else { throw NetlinkError(code: .other, operation: operation, reason: "out of memory") }
        nl_addr_set_prefixlen(built, Int32(prefixLength))
        return built
    }
}

extension NetlinkSocket {
    /// The routes through the device `index` that someone added (any protocol but the kernel's
    /// own, `proto kernel`, and router advertisements', `proto ra`): those the kernel removes as the
    /// device goes down and does not make again as it comes up. Each as `10.0.0.0/24 (proto 4)`.
    public func addedRoutes(through index: Int32) throws(NetlinkError) -> [String] {
        var cachePointer: OpaquePointer?
        try perform("list routes") { rtnl_route_alloc_cache($0, AF_UNSPEC, 0, &cachePointer) }
        guard let cachePointer else { return [] }
        let cache = NetlinkCache(cachePointer)
        return cache.objects.compactMap { route -> String? in
            let proto = rtnl_route_get_protocol(route)
            guard proto != UInt8(RTPROT_KERNEL), proto != 9 /* RTPROT_RA */ else { return nil }
            let hops = rtnl_route_get_nnexthops(route)
            guard hops > 0, (0..<hops).contains(where: { rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(route, $0)) == index }) else { return nil }
            var text = [CChar](repeating: 0, count: 64)
            if let destination = rtnl_route_get_dst(route) {
                nl_addr2str(destination, &text, text.count)
            }
            return "\(String(cString: text)) (proto \(proto))"
        }
    }
}
