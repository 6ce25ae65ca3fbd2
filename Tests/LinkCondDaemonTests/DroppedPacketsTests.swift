@testable import Capture
import Glibc
@testable import Netlink
import Testing

/// The dropped packets a trace keeps (`--keep-dropped`): the kernel's drop monitor's messages as
/// read, and which dropped frames are a condition's. The drops themselves are the kernel suite's
/// (test_packet_traces.py).
@Suite("Dropped packets kept in a trace")
struct DroppedPacketsTests {
    static let family: UInt16 = 0x1D
    static let ours: [UInt8] = [0x02, 0x6C, 0x63, 0x00, 0x00, 0x01]
    static let theirs: [UInt8] = [0x02, 0x6C, 0x63, 0x00, 0x00, 0x02]

    static func attribute(_ kind: UInt16, _ value: [UInt8]) -> [UInt8] {
        NetfilterSocket.attribute(kind, value)
    }

    static func le(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// One generic netlink message of `type`, command `command`.
    static func message(type: UInt16, command: UInt8, _ attributes: [UInt8]) -> [UInt8] {
        let length = 20 + attributes.count
        return le(UInt64(length), bytes: 4) + le(UInt64(type), bytes: 2) + [0, 0] + Array(repeating: 0, count: 8) + [command, 2, 0, 0] + attributes
    }

    /// An Ethernet frame of a UDP datagram from `source` to `destination` (IPv4, ports 5000 to 443).
    static func frame(from sourceMAC: [UInt8], to destinationMAC: [UInt8], source: [UInt8] = [10, 0, 0, 2], destination: [UInt8] = [192, 0, 2, 7], port: UInt16 = 443) -> [UInt8] {
        let ip: [UInt8] = [0x45, 0, 0, 36, 0, 1, 0, 0, 64, 17, 0, 0] + source + destination
        let udp: [UInt8] = [0x13, 0x88, UInt8(port >> 8), UInt8(port & 0xFF), 0, 16, 0, 0] + Array("ping-001".utf8)
        return destinationMAC + sourceMAC + [0x08, 0x00] + ip + udp
    }

    static func alert(reason: String, frame: [UInt8], at time: UInt64 = 1_764_500_000_123_456_789) -> [UInt8] {
        message(type: family, command: 5, attribute(14, [0, 0]) + attribute(8, []) + attribute(2, le(0xFFFF_FFFF_8100_0000, bytes: 8))
            + attribute(23, Array(reason.utf8) + [0]) + attribute(3, Array("__dev_queue_xmit+0x8c2/0xd40".utf8) + [0])
            + attribute(4 | 0x8000, attribute(0, le(3, bytes: 4))) + attribute(5, le(time, bytes: 8)) + attribute(10, le(UInt64(frame.count), bytes: 4))
            + attribute(6, [0x00, 0x08]) + attribute(7, frame))
    }

    @Test("A packet alert: the time it was dropped, the kernel's reason and place, its length and its frame; other messages skipped")
    func alerts() {
        let frame = Self.frame(from: Self.ours, to: Self.theirs)
        let summary = Self.message(type: Self.family, command: 1, Self.attribute(1, [0, 0, 0, 0]))
        let other = Self.message(type: 0x1E, command: 5, Array(Self.alert(reason: "QDISC_DROP", frame: frame).dropFirst(20)))
        let read = DropMonitorSocket.alerts(inMessages: ArraySlice(summary + Self.alert(reason: "QDISC_DROP", frame: frame) + other), family: Self.family)
        #expect(read == [DropMonitorSocket.Alert(
            nanoseconds: 1_764_500_000_123_456_789, reason: "QDISC_DROP", symbol: "__dev_queue_xmit+0x8c2/0xd40", length: UInt32(frame.count), payload: frame
        )])
    }

    @Test("Hostile alerts: a length past the bytes read, no payload, a time of the wrong size")
    func hostileAlerts() {
        var long = Self.alert(reason: "QDISC_DROP", frame: Self.frame(from: Self.ours, to: Self.theirs))
        long[0] = 0xFF
        long[1] = 0xFF
        #expect(DropMonitorSocket.alerts(inMessages: ArraySlice(long), family: Self.family).isEmpty)
        let bare = Self.message(type: Self.family, command: 5, Self.attribute(23, Array("QDISC_DROP".utf8)) + Self.attribute(5, Self.le(1, bytes: 8)))
        #expect(DropMonitorSocket.alerts(inMessages: ArraySlice(bare), family: Self.family).isEmpty)
        let oddTime = Self.message(type: Self.family, command: 5, Self.attribute(5, [1, 2, 3]) + Self.attribute(7, [1, 2, 3]))
        #expect(DropMonitorSocket.alerts(inMessages: ArraySlice(oddTime), family: Self.family).isEmpty)
    }

    @Test("The controller's answer: NET_DM's number and its events group's; a refusal throws")
    func family() throws {
        let groups = Self.attribute(7 | 0x8000, Self.attribute(1 | 0x8000, Self.attribute(2, Self.le(5, bytes: 4)) + Self.attribute(1, Array("events".utf8) + [0])))
        let reply = Self.message(type: 0x10, command: 1, Self.attribute(1, Self.le(0x1D, bytes: 2)) + Self.attribute(2, Array("NET_DM".utf8) + [0]) + groups)
        let found = try DropMonitorSocket.familyAndGroup(inReply: ArraySlice(reply), "look up")
        #expect(found?.0 == 0x1D && found?.1 == 5)
        let refused: [UInt8] = [36, 0, 0, 0, 2, 0, 0, 0] + Array(repeating: 0, count: 8) + Self.le(UInt64(UInt32(bitPattern: -ENOENT)), bytes: 4) + Array(repeating: 0, count: 16)
        #expect(throws: NetlinkError.self) { try DropMonitorSocket.familyAndGroup(inReply: ArraySlice(refused), "look up") }
    }

    @Test("A condition's drops: the frames its interface sent (leaving) or was sent (arriving) that its filter lets by; no one else's")
    func attribution() throws {
        let filter = CaptureFilter(networks: ["192.0.2.7/32"], port: 443, transports: ["udp"]).expression
        let attribution = try DropAttribution(hardwareAddress: Self.ours, leaving: filter, arriving: filter, snapLength: 4026)
        #expect(attribution.leg(of: Self.frame(from: Self.ours, to: Self.theirs)) == true)
        #expect(attribution.leg(of: Self.frame(from: Self.theirs, to: Self.ours, source: [192, 0, 2, 7], destination: [10, 0, 0, 2])) == false)
        #expect(attribution.leg(of: Self.frame(from: Self.theirs, to: [0x02, 0, 0, 0, 0, 9])) == nil, "another interface's frame")
        #expect(attribution.leg(of: Self.frame(from: Self.ours, to: Self.theirs, port: 80)) == nil, "another port of the peer")
        #expect(attribution.leg(of: Array(repeating: 0, count: 10)) == nil)
        let everything = try DropAttribution(hardwareAddress: Self.ours, leaving: nil, arriving: nil, snapLength: 4026)
        #expect(everything.leg(of: Self.frame(from: Self.ours, to: Self.theirs, port: 80)) == true)
    }

    @Test("On loopback, where every address is 0, the port's side tells the ways apart")
    func loopback() throws {
        let filter = CaptureFilter(port: 8080, portIsLocalServer: true)
        let zeros: [UInt8] = Array(repeating: 0, count: 6)
        let attribution = try DropAttribution(
            hardwareAddress: zeros, leaving: filter.expression(for: .uplink), arriving: filter.expression(for: .downlink), snapLength: 4026
        )
        #expect(attribution.leg(of: Self.frame(from: zeros, to: zeros, port: 8080)) == true)
        #expect(attribution.leg(of: Self.frame(from: zeros, to: zeros, port: 9090)) == nil)
    }

    @Test("Kept: a queueing discipline's drops (loss, a full queue); not a firewall's or a receiver's")
    func reasons() {
        #expect(DropAttribution.isTreeDrop("QDISC_DROP"))
        #expect(DropAttribution.isTreeDrop("TC_DROP"))
        #expect(!DropAttribution.isTreeDrop("NETFILTER_DROP"))
        #expect(!DropAttribution.isTreeDrop("UDP_CSUM"))
        #expect(!DropAttribution.isTreeDrop("NOT_SPECIFIED"))
    }

    @Test("A filter libpcap cannot compile is a bad request")
    func badFilter() {
        #expect(throws: CaptureError.self) { try DropAttribution(hardwareAddress: Self.ours, leaving: "net nowhere", arriving: nil, snapLength: 4026) }
    }
}
