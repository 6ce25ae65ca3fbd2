import CPcap
import Netlink

/// One direction of one interface's packets, as libpcap reads them from the kernel: opened in
/// the interface's network namespace (its AF_PACKET socket stays there), only the packets a
/// compiled filter lets by copied to user space, into a ring of bounded size. A reader that
/// falls behind loses packets in the kernel, which counts them; nothing grows in the daemon.
final class PacketTap {
    /// A packet as read: its time (nanoseconds since the epoch), its bytes up to the snap
    /// length, and its length on the wire.
    struct Packet {
        var nanoseconds: UInt64
        var data: [UInt8]
        var length: UInt32
    }

    let interface: String
    private let handle: OpaquePointer

    /// - Parameters:
    ///   - outgoing: packets the interface sends (true), or receives.
    ///   - filter: libpcap's filter language; `nil` for every packet.
    init(
        interface: String, outgoing: Bool, filter: String?, snapLength: Int32, bufferBytes: Int32, in namespace: NetworkNamespaceFile?
    ) throws(CaptureError) {
        self.interface = interface
        var errorText = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
        guard let handle = pcap_create(interface, &errorText) else {
            let reason = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw CaptureError(.kernelRefused, "cannot capture on \(interface): \(reason)")
        }
        self.handle = handle
        pcap_set_snaplen(handle, snapLength)
        pcap_set_promisc(handle, 0)
        pcap_set_immediate_mode(handle, 1)
        pcap_set_buffer_size(handle, bufferBytes)
        pcap_set_tstamp_precision(handle, Int32(PCAP_TSTAMP_PRECISION_NANO))
        // From here on a thrown error ends the instance, and `deinit` closes the handle.
        let status: Int32
        if let namespace {
            do {
                status = try namespace.whileInside("capture on \(interface)") { pcap_activate(handle) }
            } catch {
                throw CaptureError(.namespaceGone, "cannot capture on \(interface): \(error)")
            }
        } else {
            status = pcap_activate(handle)
        }
        guard status >= 0 else {
            let reason = String(cString: pcap_geterr(handle))
            throw CaptureError(status == PCAP_ERROR_NO_SUCH_DEVICE ? .namespaceGone : .kernelRefused, "cannot capture on \(interface): \(reason)")
        }
        try check(pcap_setdirection(handle, outgoing ? PCAP_D_OUT : PCAP_D_IN), "choose the direction")
        try check(pcap_setnonblock(handle, 1, &errorText), "read without blocking")
        if let filter {
            var program = bpf_program()
            try check(pcap_compile(handle, &program, filter, 1, PCAP_NETMASK_UNKNOWN), "compile the filter '\(filter)'")
            defer { pcap_freecode(&program) }
            try check(pcap_setfilter(handle, &program), "attach the filter '\(filter)'")
        }
    }

    deinit {
        pcap_close(handle)
    }

    /// Whether the interface went away while it was read (its namespace or the device ended):
    /// nothing more will come, which ends a capture, not fails it.
    private(set) var isGone = false

    /// Up to `limit` packets that are waiting, none if none is (or the interface is gone).
    func read(upTo limit: Int) throws(CaptureError) -> [Packet] {
        guard !isGone else { return [] }
        var packets: [Packet] = []
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        while packets.count < limit {
            let result = pcap_next_ex(handle, &header, &data)
            guard result == 1, let header, let data else {
                guard result < 0, result != PCAP_ERROR_BREAK else { break }
                let reason = String(cString: pcap_geterr(handle))
                // libpcap's words for a device that went down or away under the socket.
                if result == PCAP_ERROR_IFACE_NOT_UP || result == PCAP_ERROR_NO_SUCH_DEVICE
                    || ["went down", "disappeared", "Hangup"].contains(where: { reason.contains($0) }) {
                    isGone = true
                } else {
                    throw CaptureError(.kernelRefused, "capture on \(interface) failed: \(reason)")
                }
                break
            }
            let seconds = UInt64(max(0, header.pointee.ts.tv_sec))
            // With nanosecond precision, libpcap puts nanoseconds in `tv_usec`.
            let nanoseconds = seconds * 1_000_000_000 + UInt64(max(0, header.pointee.ts.tv_usec))
            let captured = Int(header.pointee.caplen)
            packets.append(Packet(nanoseconds: nanoseconds, data: Array(UnsafeBufferPointer(start: data, count: captured)), length: header.pointee.len))
        }
        return packets
    }

    /// What the kernel counted for this tap: packets its filter let by, and those it dropped
    /// because the ring was full.
    func counts() -> (received: UInt64, dropped: UInt64) {
        var statistics = pcap_stat()
        guard pcap_stats(handle, &statistics) == 0 else { return (0, 0) }
        return (UInt64(statistics.ps_recv), UInt64(statistics.ps_drop))
    }

    private func check(_ status: Int32, _ what: String) throws(CaptureError) {
        guard status >= 0 else {
            throw CaptureError(.kernelRefused, "cannot \(what) for the capture on \(interface): \(String(cString: pcap_geterr(handle)))")
        }
    }
}
