import CNetlink

/// A qdisc as the kernel reports it.
public struct QdiscInfo: Sendable, Equatable {
    public var interfaceIndex: Int32
    public var handle: TrafficControlHandle
    public var parent: TrafficControlHandle
    public var kind: String
    /// Read back for netem qdiscs only.
    public var netem: NetemOptions?
    public var statistics: TrafficStatistics?

    public init(interfaceIndex: Int32, handle: TrafficControlHandle, parent: TrafficControlHandle, kind: String, netem: NetemOptions?, statistics: TrafficStatistics? = nil) {
        self.interfaceIndex = interfaceIndex
        self.handle = handle
        self.parent = parent
        self.kind = kind
        self.netem = netem
        self.statistics = statistics
    }
}

extension NetlinkSocket {
    /// Creates a qdisc; fails with `.exists` rather than replacing anything already there.
    public func addQdisc(
        interfaceIndex: Int32, parent: TrafficControlHandle, handle: TrafficControlHandle, options: QdiscOptions
    ) throws(NetlinkError) {
        let qdisc = try makeQdisc(interfaceIndex: interfaceIndex, parent: parent, handle: handle, options: options)
        try perform("add qdisc \(options.kind) \(handle) parent \(parent) on ifindex \(interfaceIndex)") {
            send(qdisc, options: options, flags: NLM_F_CREATE | NLM_F_EXCL, on: $0)
        }
    }

    /// Changes an existing qdisc's parameters in place (same parent, handle and kind).
    ///
    /// No create flag: if the qdisc is gone the kernel refuses instead of building a new one.
    /// For netem this is `netem_change`: queued packets keep their schedule.
    public func changeQdisc(
        interfaceIndex: Int32, parent: TrafficControlHandle, handle: TrafficControlHandle, options: QdiscOptions
    ) throws(NetlinkError) {
        let qdisc = try makeQdisc(interfaceIndex: interfaceIndex, parent: parent, handle: handle, options: options)
        try perform("change qdisc \(options.kind) \(handle) on ifindex \(interfaceIndex)") {
            send(qdisc, options: options, flags: 0, on: $0)
        }
    }

    /// Deletes the qdisc `handle` attached at `parent`, with everything below it.
    public func deleteQdisc(
        interfaceIndex: Int32, parent: TrafficControlHandle, handle: TrafficControlHandle
    ) throws(NetlinkError) {
        let qdisc = try NetlinkObject(allocating: { rtnl_qdisc_alloc() }, what: "qdisc")
        rtnl_tc_set_ifindex(qdisc.pointer, interfaceIndex)
        rtnl_tc_set_parent(qdisc.pointer, parent.rawValue)
        rtnl_tc_set_handle(qdisc.pointer, handle.rawValue)
        try perform("delete qdisc \(handle) parent \(parent) on ifindex \(interfaceIndex)") {
            rtnl_qdisc_delete($0, qdisc.pointer)
        }
    }

    /// The qdisc a device has at `parent` (`.root`, `.ingressParent`, or a class), or `nil` when
    /// nothing is attached there; the kernel's default root comes back with the handle `0:`.
    ///
    /// Asked for by place, not dumped: the kernel's qdisc dump ignores the device asked for and
    /// lists every device's, so a survey by dump grows with the whole machine (each condition's
    /// tree adds eight qdiscs to it). And by place rather than by handle: only then does the
    /// kernel's answer name the parent.
    public func qdisc(interfaceIndex: Int32, attachedAt parent: TrafficControlHandle) throws(NetlinkError) -> QdiscInfo? {
        let operation = "read the qdisc at \(parent) on ifindex \(interfaceIndex)"
        var cachePointer: OpaquePointer?
        try perform(operation) { _ in nl_cache_alloc_name("route/qdisc", &cachePointer) }
        guard let cachePointer else { return nil }
        let cache = NetlinkCache(cachePointer)
        try perform(operation) { linkcond_request_qdisc($0, interfaceIndex, parent.rawValue) }
        do {
            try perform(operation) { nl_cache_pickup($0, cache.pointer) }
        } catch where error.code == .notFound || error.code == .noSuchDevice {
            return nil
        }
        // A qdisc comes in a message of its own, and the acknowledgement libnl asked for after
        // it. The kernel's built-in noop qdisc, which an ingress leaves behind when deleted, is
        // never reported: the acknowledgement alone comes, and the pickup has taken it.
        guard let qdisc = cache.objects.first else { return nil }
        try perform(operation) { nl_wait_for_ack($0) }
        return info(of: qdisc, interfaceIndex: interfaceIndex)
    }

    private func info(of qdisc: OpaquePointer, interfaceIndex: Int32) -> QdiscInfo {
        let kind = rtnl_tc_get_kind(qdisc).map { String(cString: $0) } ?? ""
        return QdiscInfo(
            interfaceIndex: interfaceIndex,
            handle: TrafficControlHandle(rawValue: rtnl_tc_get_handle(qdisc)),
            parent: TrafficControlHandle(rawValue: rtnl_tc_get_parent(qdisc)),
            kind: kind,
            netem: kind == "netem" ? readNetem(qdisc) : nil,
            statistics: TrafficStatistics(qdisc)
        )
    }

    /// `rtnl_qdisc_add`, but for netem with every attribute libnl leaves out appended.
    private func send(_ qdisc: NetlinkObject, options: QdiscOptions, flags: Int32, on socket: OpaquePointer) -> Int32 {
        guard case .netem(let netem) = options else { return rtnl_qdisc_add(socket, qdisc.pointer, flags) }
        var extras = linkcond_netem_extras()
        extras.delay_correlation = netem.delayCorrelation
        extras.loss_correlation = netem.lossCorrelation
        extras.duplicate_correlation = netem.duplicateCorrelation
        extras.reorder_probability = netem.reorderProbability
        extras.reorder_correlation = netem.reorderCorrelation
        extras.corrupt_probability = netem.corruptProbability
        extras.corrupt_correlation = netem.corruptCorrelation
        extras.rate_bytes_per_second = netem.rateBytesPerSecond
        if let model = netem.gilbertElliott {
            extras.gilbert_elliott = 1
            (extras.ge_p, extras.ge_r, extras.ge_h, extras.ge_k1) = (model.p, model.r, model.h, model.k1)
        }
        return netem.distribution.withUnsafeBufferPointer { table in
            extras.distribution = table.baseAddress
            extras.distribution_size = table.count
            return linkcond_netem_send(socket, qdisc.pointer, flags, &extras)
        }
    }

    private func makeQdisc(
        interfaceIndex: Int32, parent: TrafficControlHandle, handle: TrafficControlHandle, options: QdiscOptions
    ) throws(NetlinkError) -> NetlinkObject {
        let qdisc = try NetlinkObject(allocating: { rtnl_qdisc_alloc() }, what: "qdisc")
        rtnl_tc_set_ifindex(qdisc.pointer, interfaceIndex)
        rtnl_tc_set_parent(qdisc.pointer, parent.rawValue)
        rtnl_tc_set_handle(qdisc.pointer, handle.rawValue)
        // The kind must be set before any kind-specific setter: libnl asserts otherwise.
        try perform("prepare qdisc \(options.kind)") { _ in rtnl_tc_set_kind(qdisc.pointer, options.kind) }
        switch options {
        case .htb(let htb):
            _ = rtnl_htb_set_defcls(qdisc.pointer, UInt32(handle.major) << 16 | UInt32(htb.defaultClass))
            _ = rtnl_htb_set_rate2quantum(qdisc.pointer, htb.rateToQuantum)
        case .netem(let netem):
            rtnl_netem_set_delay(qdisc.pointer, Int32(clamping: netem.delayMicroseconds))
            rtnl_netem_set_jitter(qdisc.pointer, Int32(clamping: netem.jitterMicroseconds))
            // A raw u32 probability passed through libnl's `int` parameter.
            rtnl_netem_set_loss(qdisc.pointer, Int32(bitPattern: netem.lossProbability))
            rtnl_netem_set_limit(qdisc.pointer, Int32(clamping: netem.limitPackets))
            rtnl_netem_set_duplicate(qdisc.pointer, Int32(bitPattern: netem.duplicateProbability))
            // Reordering, correlations, corruption, the table, the loss model and the rate are
            // `send`'s: libnl writes them only when non-zero.
        case .pfifo(let limit):
            _ = rtnl_qdisc_fifo_set_limit(qdisc.pointer, Int32(clamping: limit))
        case .ingress:
            break
        }
        return qdisc
    }

    private func readNetem(_ qdisc: OpaquePointer) -> NetemOptions {
        // libnl returns the u32 probability as an Int32: values of 50% and more come back
        // negative and are not errors.
        NetemOptions(
            delayMicroseconds: UInt32(clamping: rtnl_netem_get_delay(qdisc)),
            jitterMicroseconds: UInt32(clamping: rtnl_netem_get_jitter(qdisc)),
            lossProbability: UInt32(bitPattern: rtnl_netem_get_loss(qdisc)),
            limitPackets: UInt32(clamping: rtnl_netem_get_limit(qdisc))
        )
    }
}
