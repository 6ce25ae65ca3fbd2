import CNetlink

/// A class as the kernel reports it: where it sits in the tree.
public struct ClassInfo: Sendable, Equatable {
    public var handle: TrafficControlHandle
    public var parent: TrafficControlHandle
    public var kind: String
    public var statistics: TrafficStatistics?

    public init(handle: TrafficControlHandle, parent: TrafficControlHandle, kind: String, statistics: TrafficStatistics? = nil) {
        self.handle = handle
        self.parent = parent
        self.kind = kind
        self.statistics = statistics
    }
}

extension NetlinkSocket {
    /// Creates an htb class; fails with `.exists` if the class id is taken.
    public func addHTBClass(
        interfaceIndex: Int32, parent: TrafficControlHandle, classID: TrafficControlHandle, options: HTBClassOptions
    ) throws(NetlinkError) {
        let htbClass = try makeHTBClass(interfaceIndex: interfaceIndex, parent: parent, classID: classID, options: options)
        try perform("add class htb \(classID) parent \(parent) on ifindex \(interfaceIndex)") {
            rtnl_class_add($0, htbClass.pointer, NLM_F_CREATE | NLM_F_EXCL)
        }
    }

    /// Changes an existing htb class in place; fails with `.notFound` instead of creating it.
    public func changeHTBClass(
        interfaceIndex: Int32, parent: TrafficControlHandle, classID: TrafficControlHandle, options: HTBClassOptions
    ) throws(NetlinkError) {
        let htbClass = try makeHTBClass(interfaceIndex: interfaceIndex, parent: parent, classID: classID, options: options)
        try perform("change class htb \(classID) on ifindex \(interfaceIndex)") {
            rtnl_class_add($0, htbClass.pointer, 0)
        }
    }

    /// Every class on the device.
    public func classes(interfaceIndex: Int32) throws(NetlinkError) -> [ClassInfo] {
        var cachePointer: OpaquePointer?
        try perform("list classes on ifindex \(interfaceIndex)") {
            rtnl_class_alloc_cache($0, interfaceIndex, &cachePointer)
        }
        guard let cachePointer else { return [] }
        let cache = NetlinkCache(cachePointer)
        return cache.objects.map { htbClass in
            ClassInfo(
                handle: TrafficControlHandle(rawValue: rtnl_tc_get_handle(htbClass)),
                parent: TrafficControlHandle(rawValue: rtnl_tc_get_parent(htbClass)),
                kind: rtnl_tc_get_kind(htbClass).map { String(cString: $0) } ?? "",
                statistics: TrafficStatistics(htbClass)
            )
        }
    }

    private func makeHTBClass(
        interfaceIndex: Int32, parent: TrafficControlHandle, classID: TrafficControlHandle, options: HTBClassOptions
    ) throws(NetlinkError) -> NetlinkObject {
        let htbClass = try NetlinkObject(allocating: { rtnl_class_alloc() }, what: "class")
        rtnl_tc_set_ifindex(htbClass.pointer, interfaceIndex)
        rtnl_tc_set_parent(htbClass.pointer, parent.rawValue)
        rtnl_tc_set_handle(htbClass.pointer, classID.rawValue)
        try perform("prepare class htb \(classID)") { _ in rtnl_tc_set_kind(htbClass.pointer, "htb") }
        _ = rtnl_htb_set_rate64(htbClass.pointer, options.rateBytesPerSecond)
        _ = rtnl_htb_set_ceil64(htbClass.pointer, options.ceilBytesPerSecond)
        _ = rtnl_htb_set_rbuffer(htbClass.pointer, options.burstBytes)
        _ = rtnl_htb_set_cbuffer(htbClass.pointer, options.ceilBurstBytes)
        _ = rtnl_htb_set_quantum(htbClass.pointer, options.quantumBytes)
        return htbClass
    }
}

extension NetlinkSocket {
    /// Deletes a class and the qdisc attached to it. The kernel refuses (busy) while a filter
    /// still classifies into it.
    public func deleteClass(interfaceIndex: Int32, classID: TrafficControlHandle) throws(NetlinkError) {
        let htbClass = try NetlinkObject(allocating: { rtnl_class_alloc() }, what: "class")
        rtnl_tc_set_ifindex(htbClass.pointer, interfaceIndex)
        rtnl_tc_set_handle(htbClass.pointer, classID.rawValue)
        try perform("delete class \(classID) on ifindex \(interfaceIndex)") { rtnl_class_delete($0, htbClass.pointer) }
    }
}
