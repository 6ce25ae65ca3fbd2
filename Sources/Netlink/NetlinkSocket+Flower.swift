import CNetlink
import Glibc

extension NetlinkSocket {
    /// Attaches a flower filter to the qdisc `parent`, or with `replacing` swaps the keys and
    /// class of the filter that has its handle for the new ones in one step.
    ///
    /// libnl 3.7 knows no flower key but IPv4 addresses, so the request is built here, attribute
    /// by attribute (`TCA_FLOWER_*` of linux/pkt_cls.h); values the kernel reads in network
    /// order are swapped here, and nowhere else.
    public func addFlowerFilter(
        interfaceIndex: Int32, parent: TrafficControlHandle, filter: FlowerFilter, replacing: Bool = false
    ) throws(NetlinkError) {
        let verb = replacing ? "replace" : "add"
        let description = "\(verb) filter flower prio \(filter.priority) handle \(String(filter.handle, radix: 16)) on \(parent) ifindex \(interfaceIndex)"
        let flags = replacing ? NLM_F_CREATE : NLM_F_CREATE | NLM_F_EXCL
        let message = try filterMessage(
            Int32(RTM_NEWTFILTER), flags: flags, interfaceIndex: interfaceIndex, parent: parent,
            priority: filter.priority, handle: filter.handle, what: description
        )
        do {
            try fillFlowerOptions(message, filter, what: description)
        } catch {
            nlmsg_free(message)
            throw error
        }
        // nl_send_sync frees the message, whatever the outcome.
        try perform(description) { nl_send_sync($0, message) }
    }

    /// Deletes one flower filter by its handle. A handle of 0 would delete every filter of
    /// the priority, so it is refused here.
    public func deleteFlowerFilter(interfaceIndex: Int32, parent: TrafficControlHandle, priority: UInt16, handle: UInt32) throws(NetlinkError) {
        precondition(handle != 0, "handle 0 deletes a whole priority")
        let description = "delete filter flower prio \(priority) handle \(String(handle, radix: 16)) on \(parent) ifindex \(interfaceIndex)"
        let message = try filterMessage(
            Int32(RTM_DELTFILTER), flags: 0, interfaceIndex: interfaceIndex, parent: parent,
            priority: priority, handle: handle, what: description
        )
        try perform(description) { nl_send_sync($0, message) }
    }

    /// A filter request's header and kind; the caller adds the options.
    private func filterMessage(
        _ type: Int32, flags: Int32, interfaceIndex: Int32, parent: TrafficControlHandle, priority: UInt16, handle: UInt32, what: String
    ) throws(NetlinkError) -> OpaquePointer {
        guard let message = nlmsg_alloc_simple(type, flags) else {
            throw NetlinkError(code: .other, operation: what, errno: ENOMEM, reason: "out of memory")
        }
        var header = tcmsg()
        header.tcm_family = UInt8(AF_UNSPEC)
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        header.tcm_handle = handle
        header.tcm_info = UInt32(priority) << 16 | UInt32(UInt16(ETH_P_ALL).bigEndian)
        let appended = nlmsg_append(message, &header, MemoryLayout<tcmsg>.size, Int32(NLMSG_ALIGNTO))
        let kind = nla_put_string(message, Int32(TCA_KIND), "flower")
        guard appended == 0, kind == 0 else {
            nlmsg_free(message)
            throw NetlinkError(code: .other, operation: what, errno: ENOMEM, reason: "request does not fit")
        }
        return message
    }

    private func fillFlowerOptions(_ message: OpaquePointer, _ filter: FlowerFilter, what: String) throws(NetlinkError) {
        let key = filter.key
        precondition(key.isConsistent, "flower keys the kernel would ignore: \(key)")
        var results: [Int32] = []
        guard let options = nla_nest_start(message, Int32(TCA_OPTIONS)) else {
            throw NetlinkError(code: .other, operation: what, errno: ENOMEM, reason: "request does not fit")
        }
        results.append(nla_put_u32(message, Int32(TCA_FLOWER_CLASSID), filter.classID.rawValue))
        results.append(nla_put_u32(message, Int32(TCA_FLOWER_FLAGS), UInt32(TCA_CLS_FLAGS_SKIP_HW)))
        results.append(nla_put_u16(message, Int32(TCA_FLOWER_KEY_ETH_TYPE), key.etherType.rawValue.bigEndian))
        if let number = key.ipProtocol {
            results.append(nla_put_u8(message, Int32(TCA_FLOWER_KEY_IP_PROTO), number))
        }
        let isIPv4 = key.etherType == .ipv4
        func putAddress(_ address: FlowerAddress?, value: Int, mask: Int) {
            guard let address else { return }
            for (attribute, bytes) in [(value, address.address), (mask, address.mask)] {
                results.append(bytes.withUnsafeBytes { nla_put(message, Int32(attribute), Int32($0.count), $0.baseAddress) })
            }
        }
        if isIPv4 {
            putAddress(key.source, value: Int(TCA_FLOWER_KEY_IPV4_SRC), mask: Int(TCA_FLOWER_KEY_IPV4_SRC_MASK))
            putAddress(key.destination, value: Int(TCA_FLOWER_KEY_IPV4_DST), mask: Int(TCA_FLOWER_KEY_IPV4_DST_MASK))
        } else {
            putAddress(key.source, value: Int(TCA_FLOWER_KEY_IPV6_SRC), mask: Int(TCA_FLOWER_KEY_IPV6_SRC_MASK))
            putAddress(key.destination, value: Int(TCA_FLOWER_KEY_IPV6_DST), mask: Int(TCA_FLOWER_KEY_IPV6_DST_MASK))
        }
        let tcp = key.ipProtocol == 6
        if let port = key.sourcePort {
            results.append(nla_put_u16(message, Int32(tcp ? TCA_FLOWER_KEY_TCP_SRC : TCA_FLOWER_KEY_UDP_SRC), port.bigEndian))
        }
        if let port = key.destinationPort {
            results.append(nla_put_u16(message, Int32(tcp ? TCA_FLOWER_KEY_TCP_DST : TCA_FLOWER_KEY_UDP_DST), port.bigEndian))
        }
        if let type = key.icmpv6Type {
            results.append(nla_put_u8(message, Int32(TCA_FLOWER_KEY_ICMPV6_TYPE), type.value))
            results.append(nla_put_u8(message, Int32(TCA_FLOWER_KEY_ICMPV6_TYPE_MASK), type.mask))
        }
        guard results.allSatisfy({ $0 == 0 }), nla_nest_end(message, options) == 0 else {
            throw NetlinkError(code: .other, operation: what, errno: ENOMEM, reason: "request does not fit")
        }
    }
}
