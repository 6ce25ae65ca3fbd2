import CPcap
import Netlink

/// The packets a condition's trees dropped, as the kernel's drop monitor reports them: frames
/// the condition's interface sent (dropped by its own tree on the way out) or was sent (dropped
/// by the IFB's tree on the way in), told apart by the interface's link-layer address, that the
/// capture's filter lets by and that a queueing discipline dropped (loss, a full queue).
///
/// The monitor reports every drop of the machine, each network namespace's; its alerts are
/// read here and matched in user space, so that a capture that keeps nothing costs nothing.
final class DroppedPackets {
    struct Dropped {
        var packet: PacketTap.Packet
        /// The interface sent it (true), or it was on its way in.
        var leaving: Bool
        /// The kernel's reason, e.g. `QDISC_DROP`.
        var reason: String
    }

    private let socket: DropMonitorSocket
    private let attribution: DropAttribution
    private let snapLength: Int
    /// The monitor's alerts lost because this reader's socket was full.
    private(set) var overran = false

    init(attribution: DropAttribution, snapLength: Int32) throws(CaptureError) {
        self.attribution = attribution
        self.snapLength = Int(snapLength)
        try DropMonitor.acquire()
        do {
            socket = try DropMonitorSocket.open()
            try socket.subscribe()
        } catch {
            DropMonitor.release()
            throw CaptureError(.kernelRefused, "cannot keep the dropped packets: \(error)")
        }
    }

    deinit {
        DropMonitor.release()
    }

    /// The condition's dropped packets the monitor reported since the last read.
    func read(upTo limit: Int) throws(CaptureError) -> [Dropped] {
        let read: (alerts: [DropMonitorSocket.Alert], overran: Bool)
        do {
            read = try socket.alerts(upTo: limit)
        } catch {
            throw CaptureError(.kernelRefused, "reading the kernel's drop monitor failed: \(error)")
        }
        if read.overran { overran = true }
        return read.alerts.compactMap { alert in
            guard let reason = alert.reason, DropAttribution.isTreeDrop(reason), let leaving = attribution.leg(of: alert.payload) else { return nil }
            let data = Array(alert.payload.prefix(snapLength))
            return Dropped(packet: PacketTap.Packet(nanoseconds: alert.nanoseconds, data: data, length: alert.length), leaving: leaving, reason: reason)
        }
    }
}

/// Which dropped frames are a condition's, and which way each went: by the interface's
/// link-layer address (the frames it sent, the frames sent to it) and the capture's filter for
/// each way, compiled by libpcap for Ethernet frames and run here on each frame.
final class DropAttribution {
    private let hardwareAddress: [UInt8]
    /// `nil` lets every frame by.
    private var leavingFilter: bpf_program?
    private var arrivingFilter: bpf_program?
    /// Whether frames can be told apart by address (not on loopback, where every address is 0).
    private let byAddress: Bool

    /// - Parameters:
    ///   - hardwareAddress: the condition's interface's link-layer address.
    ///   - leaving, arriving: the capture's filter (libpcap's language) for each way; `nil`: every packet.
    init(hardwareAddress: [UInt8], leaving: String?, arriving: String?, snapLength: Int32) throws(CaptureError) {
        self.hardwareAddress = hardwareAddress
        self.byAddress = hardwareAddress.count == 6 && hardwareAddress.contains { $0 != 0 }
        leavingFilter = try Self.compile(leaving, snapLength: snapLength)
        do {
            arrivingFilter = try Self.compile(arriving, snapLength: snapLength)
        } catch {
            if leavingFilter != nil { pcap_freecode(&leavingFilter!) }
            throw error
        }
    }

    deinit {
        if leavingFilter != nil { pcap_freecode(&leavingFilter!) }
        if arrivingFilter != nil { pcap_freecode(&arrivingFilter!) }
    }

    /// Whether the condition's interface sent `frame` (true) or was sent it (false); `nil` when
    /// it is neither's, or the capture's filter for its way does not let it by.
    func leg(of frame: [UInt8]) -> Bool? {
        guard frame.count >= 14 else { return nil }
        if byAddress {
            if frame[6..<12].elementsEqual(hardwareAddress), matches(frame, leavingFilter) { return true }
            if frame[0..<6].elementsEqual(hardwareAddress), matches(frame, arrivingFilter) { return false }
            return nil
        }
        // Loopback: both ends' addresses are 0, and each way has its own filter (the port's side).
        if matches(frame, leavingFilter) { return true }
        if matches(frame, arrivingFilter) { return false }
        return nil
    }

    /// Drops by a queueing discipline or a traffic-control action: the condition's trees. A
    /// failure's rules (netfilter) are counted in the trace's statistics, not kept: the machine's
    /// own firewall drops for the same reason.
    static func isTreeDrop(_ reason: String) -> Bool {
        reason.hasPrefix("QDISC") || reason.hasPrefix("TC_")
    }

    private func matches(_ frame: [UInt8], _ program: bpf_program?) -> Bool {
        guard var program else { return true }
        var header = pcap_pkthdr()
        header.caplen = UInt32(frame.count)
        header.len = UInt32(frame.count)
        return frame.withUnsafeBufferPointer { pcap_offline_filter(&program, &header, $0.baseAddress) } != 0
    }

    private static func compile(_ expression: String?, snapLength: Int32) throws(CaptureError) -> bpf_program? {
        guard let expression else { return nil }
        guard let dead = pcap_open_dead(DLT_EN10MB, snapLength) else {
            throw CaptureError(.kernelRefused, "cannot compile the filter '\(expression)' for the dropped packets")
        }
        defer { pcap_close(dead) }
        var program = bpf_program()
        guard pcap_compile(dead, &program, expression, 1, PCAP_NETMASK_UNKNOWN) == 0 else {
            throw CaptureError(.badRequest, "cannot compile the filter '\(expression)': \(String(cString: pcap_geterr(dead)))")
        }
        return program
    }
}
