import Pcapng
import Testing

/// pcapng as linkcond writes it and reads it back; tshark and capinfos read the same files in
/// the kernel suite (test_packet_traces.py).
@Suite("pcapng written and read")
struct PcapngTests {
    let writer = PcapngWriter()

    func trace(packets: [[UInt8]] = []) -> [UInt8] {
        writer.sectionHeader(application: "linkcond 0.4.0", system: "Linux", comment: "condition veth0: Slow Net")
            + writer.interface(.ethernet, snapLength: 262_144, name: "veth0", description: "linkcond condition veth0")
            + writer.interface(.notes, snapLength: 65_535, name: "linkcond", description: "changes of the condition")
            + packets.joined()
    }

    @Test("a trace's interfaces, packets (data, lengths, direction, time to the nanosecond) and notes read back")
    func roundTrip() throws {
        let frame: [UInt8] = Array(0..<61)
        let bytes = trace(packets: [
            writer.packet(interface: 0, nanoseconds: 1_795_980_130_429_033_512, data: frame, length: 1514, direction: .outbound),
            writer.packet(interface: 0, nanoseconds: 1_795_980_130_529_033_999, data: frame.prefix(13), length: 13, direction: .inbound),
            writer.packet(interface: 1, nanoseconds: 1_795_980_131_000_000_000, data: Array("profile: Slow Net".utf8), length: 17,
                          comment: "profile: Slow Net (activate)"),
        ])
        #expect(bytes.count % 4 == 0)
        let read = try PcapngReader(bytes)
        #expect(read.application == "linkcond 0.4.0")
        #expect(read.sectionComments == ["condition veth0: Slow Net"])
        #expect(read.interfaces.map(\.name) == ["veth0", "linkcond"])
        #expect(read.interfaces.map(\.link) == [1, 147])
        #expect(read.interfaces.allSatisfy { $0.ticksPerSecond == 1_000_000_000 })
        #expect(read.packets.count == 3)
        #expect(Array(read.packets[0].data) == frame && read.packets[0].length == 1514 && read.packets[0].direction == .outbound)
        #expect(read.packets[0].nanoseconds == 1_795_980_130_429_033_512)
        #expect(Array(read.packets[1].data) == Array(frame.prefix(13)) && read.packets[1].direction == .inbound)
        #expect(read.packets[2].interface == 1 && read.packets[2].comments == ["profile: Slow Net (activate)"])
        #expect(read.packets[2].direction == .unknown)
    }

    @Test("the statistics block's counts and comment")
    func statistics() throws {
        let counts = CaptureCounts(startNanoseconds: 10, received: 7, droppedByCondition: 3, droppedByCapture: 1, written: 6)
        let read = try PcapngReader(trace() + writer.statistics(interface: 0, at: 99, counts, comment: "3 dropped by the condition (loss)"))
        let statistics = try #require(read.statistics.first)
        #expect(statistics.received == 7 && statistics.interfaceDropped == 3 && statistics.systemDropped == 1 && statistics.delivered == 6)
        #expect(statistics.comments == ["3 dropped by the condition (loss)"])
    }

    @Test("a comment longer than an option holds is cut where a character ends")
    func longComment() throws {
        let long = String(repeating: "é", count: 40_000)  // 80 000 bytes
        let read = try PcapngReader(trace(packets: [writer.packet(interface: 1, nanoseconds: 1, data: [], length: 0, comment: long)]))
        let comment = try #require(read.packets.first?.comments.first)
        #expect(comment.utf8.count <= 65_535 && comment.utf8.count >= 65_533)
        #expect(comment.allSatisfy { $0 == "é" })
    }

    @Test("a trace cut inside its last block: refused, or read up to it when the end may be cut")
    func truncated() throws {
        let whole = trace(packets: [writer.packet(interface: 0, nanoseconds: 5, data: [1, 2, 3], length: 3)])
        let cut = Array(whole.dropLast(6))
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(cut) }
        let read = try PcapngReader(cut, allowingTruncatedEnd: true)
        #expect(read.interfaces.count == 2 && read.packets.isEmpty)
    }

    @Test("hostile blocks are refused, naming where: lengths that disagree, run past the input or are not whole words; an undescribed interface; options past their block")
    func hostile() throws {
        let good = trace()
        #expect(throws: PcapngReader.Failure.notPcapng) { try PcapngReader([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]) }
        #expect(throws: PcapngReader.Failure.notPcapng) { try PcapngReader([]) }

        var lengths = good
        lengths[good.count - 4] ^= 0x04  // the last block's trailing length
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(lengths) }

        var odd = writer.packet(interface: 0, nanoseconds: 1, data: [1], length: 1)
        odd[4] = 30  // not a multiple of four
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(good + odd) }

        var huge = writer.packet(interface: 0, nanoseconds: 1, data: [1], length: 1)
        huge[4...7] = [0xFC, 0xFF, 0xFF, 0x7F]
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(good + huge) }

        let stranger = writer.packet(interface: 7, nanoseconds: 1, data: [1], length: 1)
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(good + stranger) }

        var captured = writer.packet(interface: 0, nanoseconds: 1, data: [1, 2, 3, 4], length: 4)
        captured[20] = 200  // more captured than the block holds
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(good + captured) }

        var option = writer.packet(interface: 0, nanoseconds: 1, data: [1, 2, 3, 4], length: 4, comment: "abcd")
        option[34] = 0xFF  // the comment's length (after 28 bytes of header and 4 of data, its code)
        #expect(throws: PcapngReader.Failure.self) { try PcapngReader(good + option) }
    }

    @Test("a big-endian section reads the same")
    func bigEndian() throws {
        // A section header, an Ethernet interface and one packet, written by hand in big-endian order.
        let section: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 0, 0, 0, 28, 0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0,
                                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 28]
        let interface: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 20, 0, 1, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 20]
        let packet: [UInt8] = [0, 0, 0, 6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4,
                               9, 8, 7, 6, 0, 0, 0, 36]
        let read = try PcapngReader(section + interface + packet)
        #expect(read.interfaces.first?.link == 1 && read.interfaces.first?.snapLength == 65_535)
        let first = try #require(read.packets.first)
        // Microseconds (no if_tsresol): (1 << 32 | 2) µs.
        #expect(first.nanoseconds == ((1 << 32) | 2) * 1_000 && Array(first.data) == [9, 8, 7, 6])
    }
}
