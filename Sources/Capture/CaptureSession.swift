import Glibc
import Netlink
import Pcapng

/// A condition's packets as a pcapng stream: both directions after the condition (what leaves
/// the interface after its uplink tree; what leaves the IFB after its downlink tree, or what
/// arrives when the condition has no tree), each packet flagged inbound or outbound as the app
/// sees it, and the condition's changes as notes at their time on an interface of their own.
/// Kept when asked: the packets the condition's trees dropped, on a third interface, each at the
/// time the kernel dropped it, its comment saying why (`DroppedPackets`).
///
/// Nothing runs between polls: the owner polls as often as it wants the stream to move, and a
/// poll returns at most `pollBytes` of blocks. While nobody polls, the kernel's rings fill and
/// then drop, counted; the daemon holds no more than one poll's blocks.
public final class CaptureSession {
    public struct Scope: Sendable {
        /// The condition's interface, in `namespacePath`'s namespace (the daemon's when `nil`).
        public var interface: String
        /// The IFB that carries the interface's downlink tree, when the condition has one.
        public var ifb: String?
        public var namespacePath: String?
        public var filter: CaptureFilter
        /// True when the interface faces the app from the far side (a device behind a
        /// gateway): what leaves the interface arrives at the app.
        public var facesTheApp: Bool
        /// Names the target in the trace's interface block, e.g. `veth-c1` or `device 10.9.0.2 on lan0`.
        public var targetName: String

        public init(interface: String, ifb: String?, namespacePath: String?, filter: CaptureFilter, facesTheApp: Bool, targetName: String) {
            self.interface = interface
            self.ifb = ifb
            self.namespacePath = namespacePath
            self.filter = filter
            self.facesTheApp = facesTheApp
            self.targetName = targetName
        }
    }

    public struct Limits: Sendable {
        public static let largestSnapLength: Int32 = 262_144
        /// Whole packets of any Ethernet MTU up to 4 000, and the first 4 026 bytes of the
        /// kernel's offloaded super-packets (TSO, GRO: up to 64 KiB, cut by a device later).
        /// Each packet takes a frame of the ring this large (libpcap's TPACKET_V2), plus 70
        /// bytes of header: 4 026 is a page, so a 4 MB ring holds 1 024 packets (at 4 096 it
        /// held 512, at 262 144 only 16, which lost 40% of 10 000 packets a second).
        public static let defaultSnapLength: Int32 = 4_026
        public static let smallestSnapLength: Int32 = 64
        public var snapLength: Int32 = defaultSnapLength
        /// The kernel's ring for each direction.
        public var bufferBytes: Int32 = 4 << 20
        /// What one poll returns at most.
        public var pollBytes = 1 << 20

        public init(snapLength: Int32 = defaultSnapLength) {
            self.snapLength = snapLength
        }
    }

    private struct Tap {
        var tap: PacketTap
        var direction: PacketDirection
        /// The device it reads: the interface (its outgoing for the uplink, its incoming for a
        /// downlink without a tree) or the IFB (its outgoing).
        var device: String
    }

    private let scope: Scope
    private let limits: Limits
    private let writer = PcapngWriter()
    private var taps: [Tap] = []
    private let startNanoseconds: UInt64
    private let namespace: NetworkNamespaceFile?
    /// What taps counted before they were closed (the downlink moved to or from an IFB).
    private var closedCounts: (received: UInt64, dropped: UInt64) = (0, 0)
    /// Packets a closed tap still held, written by the next poll.
    private var leftOver: [(PacketTap.Packet, PacketDirection)] = []
    /// `taps`' order: the uplink's, then the downlink's.
    private static let downlink = 1
    public private(set) var packetsWritten: UInt64 = 0
    /// The dropped packets written (on `droppedInterface`), not counted in `packetsWritten`.
    public private(set) var droppedWritten: UInt64 = 0
    private var dropped: DroppedPackets?
    private static let packetInterface: UInt32 = 0
    private static let notesInterface: UInt32 = 1
    private static let droppedInterface: UInt32 = 2

    /// - Parameter keepingDropped: also write the packets the condition's trees drop, marked.
    public init(_ scope: Scope, limits: Limits = Limits(), keepingDropped: Bool = false) throws(CaptureError) {
        self.scope = scope
        self.limits = limits
        self.startNanoseconds = Self.now()
        do {
            namespace = try scope.namespacePath.map { path throws(NetlinkError) in try NetworkNamespaceFile(path: path) }
        } catch {
            throw CaptureError(.namespaceGone, "cannot capture in \(scope.namespacePath ?? "its namespace"): \(error)")
        }
        // On loopback libpcap drops every outgoing copy (each comes back in), so the uplink is
        // read as it arrives back, right after its tree.
        taps.append(try tap(scope.interface, outgoing: !scope.filter.portIsLocalServer, leg: .uplink))
        taps.append(try downlinkTap(through: scope.ifb))
        dropped = keepingDropped ? try DroppedPackets(
            attribution: DropAttribution(
                hardwareAddress: try Self.hardwareAddress(of: scope.interface, in: namespace),
                leaving: scope.filter.expression(for: .uplink), arriving: scope.filter.expression(for: .downlink), snapLength: limits.snapLength
            ),
            snapLength: limits.snapLength
        ) : nil
    }

    private static func hardwareAddress(of interface: String, in namespace: NetworkNamespaceFile?) throws(CaptureError) -> [UInt8] {
        let link: LinkInfo?
        do throws(NetlinkError) {
            let socket = if let namespace { try NetlinkSocket(in: namespace) } else { try NetlinkSocket() }
            link = try socket.link(named: interface)
        } catch {
            throw CaptureError(.kernelRefused, "cannot keep the dropped packets of \(interface): \(error)")
        }
        guard let link else {
            throw CaptureError(.namespaceGone, "cannot keep the dropped packets of \(interface): it is gone")
        }
        return link.hardwareAddress
    }

    private func tap(_ device: String, outgoing: Bool, leg: CaptureFilter.Leg) throws(CaptureError) -> Tap {
        let direction: PacketDirection = (leg == .uplink) != scope.facesTheApp ? .outbound : .inbound
        let tap = try PacketTap(
            interface: device, outgoing: outgoing, filter: scope.filter.expression(for: leg), snapLength: limits.snapLength,
            bufferBytes: limits.bufferBytes, in: namespace
        )
        return Tap(tap: tap, direction: direction, device: device)
    }

    /// The downlink after the condition: what leaves the IFB's tree, or what arrives at the
    /// interface while the condition has no tree.
    private func downlinkTap(through ifb: String?) throws(CaptureError) -> Tap {
        if let ifb {
            return try tap(ifb, outgoing: true, leg: .downlink)
        }
        return try tap(scope.interface, outgoing: false, leg: .downlink)
    }

    /// Reads the downlink where the condition's tree now is: from the IFB once a profile made
    /// one, from the interface again once it is gone. The packets the old tap still holds are
    /// read first, so none is lost in the move. A downlink that cannot be opened where it went
    /// (its namespace ending with the condition) is read where it was, until that is gone too.
    public func follow(ifb: String?) {
        let current = taps[Self.downlink]
        guard current.device != ifb ?? scope.interface, !interfaceIsGone, let next = try? downlinkTap(through: ifb) else { return }
        for packet in (try? current.tap.read(upTo: 4_096)) ?? [] {
            leftOver.append((packet, current.direction))
        }
        let counts = current.tap.counts()
        closedCounts = (closedCounts.received + counts.received, closedCounts.dropped + counts.dropped)
        taps[Self.downlink] = next
    }

    /// The section header and the two interfaces: the trace's first bytes.
    public func header(application: String, comment: String) -> [UInt8] {
        var system = utsname()
        uname(&system)
        let release = withUnsafeBytes(of: system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let filter = scope.filter.expression.map { "; filter: \($0)" } ?? ""
        return writer.sectionHeader(application: application, system: "Linux \(release)", comment: comment)
            + writer.interface(
                .ethernet, snapLength: UInt32(limits.snapLength), name: scope.targetName,
                description: "linkcond condition on \(scope.targetName): both directions after the condition\(filter)"
            )
            + writer.interface(.notes, snapLength: 65_535, name: "linkcond", description: "the condition's changes, each a note at its time")
            + (dropped == nil ? [] : writer.interface(
                .ethernet, snapLength: UInt32(limits.snapLength), name: "\(scope.targetName) dropped",
                description: "the packets the condition dropped (loss, full queues), each at the time the kernel dropped it; its comment says why"
            ))
    }

    /// `notes` (each at its CLOCK_REALTIME time) and the packets waiting, as pcapng blocks in
    /// time order, at most `limits.pollBytes` of them (or `packetLimit` packets more).
    public func poll(notes: [(nanoseconds: UInt64, text: String)] = [], packetLimit: UInt64 = .max) throws(CaptureError) -> [UInt8] {
        var entries: [(UInt64, [UInt8])] = notes.map { note in
            let bytes = Array(note.text.utf8)
            return (note.nanoseconds, writer.packet(
                interface: Self.notesInterface, nanoseconds: note.nanoseconds, data: bytes, length: UInt32(bytes.count), comment: note.text
            ))
        }
        var bytes = 0
        var packets: UInt64 = 0
        func add(_ packet: PacketTap.Packet, _ direction: PacketDirection) {
            let block = writer.packet(
                interface: Self.packetInterface, nanoseconds: packet.nanoseconds, data: packet.data, length: packet.length, direction: direction
            )
            bytes += block.count
            packets += 1
            entries.append((packet.nanoseconds, block))
        }
        let held = leftOver.prefix(Int(min(UInt64(leftOver.count), packetLimit)))
        for (packet, direction) in held { add(packet, direction) }
        leftOver.removeFirst(held.count)
        // A batch from each direction in turn, so that a flood one way cannot starve the other.
        var drained = Set<Int>()
        while bytes < limits.pollBytes, packets < packetLimit, drained.count < taps.count {
            for (index, tap) in taps.enumerated() where !drained.contains(index) && packets < packetLimit {
                let read = try tap.tap.read(upTo: Int(min(64, packetLimit - packets)))
                if read.count < 64 { drained.insert(index) }
                for packet in read { add(packet, tap.direction) }
            }
        }
        packetsWritten += packets
        for drop in try dropped?.read(upTo: 64) ?? [] {
            let direction: PacketDirection = drop.leaving != scope.facesTheApp ? .outbound : .inbound
            let comment = "dropped by the condition (\(drop.reason)) as it \(drop.leaving ? "left" : "came in at") \(scope.interface)"
            entries.append((drop.packet.nanoseconds, writer.packet(
                interface: Self.droppedInterface, nanoseconds: drop.packet.nanoseconds, data: drop.packet.data, length: drop.packet.length,
                direction: direction, comment: comment
            )))
            droppedWritten += 1
        }
        entries.sort { $0.0 < $1.0 }
        return entries.flatMap(\.1)
    }

    /// Whether the kernel's drop monitor lost alerts for this capture (its socket was full):
    /// the dropped packets kept are then fewer than those dropped.
    public var droppedOverran: Bool { dropped?.overran ?? false }

    /// Whether the capture keeps the dropped packets.
    public var keepsDropped: Bool { dropped != nil }

    /// The closing statistics: packets the kernel passed to the capture, those it dropped
    /// (a ring full), those the condition dropped (`conditionDrops`, when known), those written.
    public func statistics(conditionDrops: UInt64?, comment: String) -> [UInt8] {
        let kernel = taps.map { $0.tap.counts() } + [closedCounts]
        let counts = CaptureCounts(
            startNanoseconds: startNanoseconds, received: kernel.map(\.received).reduce(0, +),
            droppedByCondition: conditionDrops ?? 0, droppedByCapture: kernel.map(\.dropped).reduce(0, +), written: packetsWritten
        )
        return writer.statistics(interface: Self.packetInterface, at: Self.now(), counts, comment: comment)
    }

    /// Whether the condition's interface went away (its sandbox or namespace ended): what was
    /// read before is all there will be.
    public var interfaceIsGone: Bool {
        taps.contains { $0.tap.isGone }
    }

    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
