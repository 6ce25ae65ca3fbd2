import CNetlink
import Glibc

/// A filter as the kernel reports it.
public struct FilterInfo: Sendable, Equatable {
    /// The qdisc the filter hangs from.
    public var parent: TrafficControlHandle
    public var priority: UInt16
    public var protocolType: EthernetProtocol
    public var handle: UInt32
    public var kind: String
    /// The class a u32 filter classifies into, if any.
    public var classID: TrafficControlHandle?
    /// The device a mirred action redirects to, if any.
    public var redirectInterfaceIndex: Int32?
    /// A u32 node's selector keys, as sent (see `U32Filter.wireKeys`).
    public var keys: [U32Key]

    public init(
        parent: TrafficControlHandle, priority: UInt16, protocolType: EthernetProtocol, handle: UInt32, kind: String,
        classID: TrafficControlHandle?, redirectInterfaceIndex: Int32?, keys: [U32Key] = []
    ) {
        self.parent = parent
        self.priority = priority
        self.protocolType = protocolType
        self.handle = handle
        self.kind = kind
        self.classID = classID
        self.redirectInterfaceIndex = redirectInterfaceIndex
        self.keys = keys
    }

    /// Whether this is a u32 node that matches packets, as opposed to the hash table u32 adds
    /// for each priority (handle `800:`).
    public var isU32Node: Bool { kind == "u32" && handle & 0xFFF != 0 }

    /// Whether this is a flower filter, as opposed to the entry a dump lists for each priority
    /// (handle 0), which no request creates or deletes.
    public var isFlowerFilter: Bool { kind == "flower" && handle != 0 }

    /// The node as a `U32Filter`, for comparing with what linkcond would create; `nil` for
    /// anything that is not a u32 node with exactly one of linkcond's actions.
    public var u32Filter: U32Filter? {
        guard isU32Node else { return nil }
        let action: U32Action
        switch (classID, redirectInterfaceIndex) {
        case (let classID?, nil): action = .classify(classID)
        case (nil, let index?): action = .redirect(toInterfaceIndex: index)
        default: return nil
        }
        return U32Filter(priority: priority, protocolType: protocolType, keys: keys, action: action)
    }
}

extension NetlinkSocket {
    /// Attaches a u32 filter to the qdisc `parent`, as a new node of the priority's hash table.
    public func addU32Filter(interfaceIndex: Int32, parent: TrafficControlHandle, filter: U32Filter) throws(NetlinkError) {
        let description = "add filter u32 prio \(filter.priority) \(filter.protocolType) on \(parent) ifindex \(interfaceIndex)"
        let classifier = try NetlinkObject(allocating: { rtnl_cls_alloc() }, what: "filter")
        rtnl_tc_set_ifindex(classifier.pointer, interfaceIndex)
        rtnl_tc_set_parent(classifier.pointer, parent.rawValue)
        try perform(description) { _ in rtnl_tc_set_kind(classifier.pointer, "u32") }
        rtnl_cls_set_prio(classifier.pointer, filter.priority)
        rtnl_cls_set_protocol(classifier.pointer, filter.protocolType.rawValue)

        for key in filter.wireKeys {
            try perform(description) {
                _ in rtnl_u32_add_key(classifier.pointer, key.value.bigEndian, key.mask.bigEndian, key.offset, 0)
            }
        }
        try perform(description) { _ in rtnl_u32_set_cls_terminal(classifier.pointer) }

        // Declared here so the action outlives the send below.
        var action: NetlinkObject?
        switch filter.action {
        case .classify(let classID):
            try perform(description) { _ in rtnl_u32_set_classid(classifier.pointer, classID.rawValue) }
        case .redirect(let target):
            let mirred = try NetlinkObject(allocating: { rtnl_act_alloc() }, what: "action")
            try perform(description) { _ in rtnl_tc_set_kind(mirred.pointer, "mirred") }
            _ = rtnl_mirred_set_action(mirred.pointer, TCA_EGRESS_REDIR)
            _ = rtnl_mirred_set_policy(mirred.pointer, TC_ACT_STOLEN)
            _ = rtnl_mirred_set_ifindex(mirred.pointer, UInt32(bitPattern: target))
            try perform(description) { _ in rtnl_u32_add_action(classifier.pointer, mirred.pointer) }
            action = mirred
        }
        try perform(description) { rtnl_cls_add($0, classifier.pointer, NLM_F_CREATE | NLM_F_EXCL) }
        withExtendedLifetime(action) {}
    }

    /// Every filter attached to the qdisc `parent` on the device.
    public func filters(interfaceIndex: Int32, parent: TrafficControlHandle) throws(NetlinkError) -> [FilterInfo] {
        var cachePointer: OpaquePointer?
        try perform("list filters on \(parent) ifindex \(interfaceIndex)") {
            rtnl_cls_alloc_cache($0, interfaceIndex, parent.rawValue, &cachePointer)
        }
        guard let cachePointer else { return [] }
        let cache = NetlinkCache(cachePointer)
        return cache.objects.map { classifier in
            let kind = rtnl_tc_get_kind(classifier).map { String(cString: $0) } ?? ""
            var classID: TrafficControlHandle?
            var redirect: Int32?
            var keys: [U32Key] = []
            if kind == "u32" {
                var index: UInt8 = 0
                var value: UInt32 = 0
                var mask: UInt32 = 0
                var offset: Int32 = 0
                var offsetMask: Int32 = 0
                while index < UInt8.max, rtnl_u32_get_key(classifier, index, &value, &mask, &offset, &offsetMask) == 0 {
                    // Keys read back exactly as sent: network byte order, 32-bit aligned.
                    if offset % 4 == 0 {
                        keys.append(U32Key(offset: offset, value: UInt32(bigEndian: value), mask: UInt32(bigEndian: mask)))
                    }
                    index += 1
                }
                var raw: UInt32 = 0
                if rtnl_u32_get_classid(classifier, &raw) == 0 {
                    classID = TrafficControlHandle(rawValue: raw)
                }
                if let action = rtnl_u32_get_action(classifier),
                   let actionKind = rtnl_tc_get_kind(action), String(cString: actionKind) == "mirred" {
                    redirect = Int32(bitPattern: rtnl_mirred_get_ifindex(action))
                }
            }
            return FilterInfo(
                parent: parent,
                priority: rtnl_cls_get_prio(classifier),
                protocolType: EthernetProtocol(rawValue: rtnl_cls_get_protocol(classifier)),
                handle: rtnl_tc_get_handle(classifier),
                kind: kind,
                classID: classID,
                redirectInterfaceIndex: redirect,
                keys: keys
            )
        }
    }
}
