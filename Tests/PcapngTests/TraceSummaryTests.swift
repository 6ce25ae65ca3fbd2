@testable import Pcapng
import Testing

/// A trace's summary: frames built here byte by byte, as a command's traffic would be captured.
@Suite("What a trace says a command talked to")
struct TraceSummaryTests {
    let writer = PcapngWriter()
    static let local4: [UInt8] = [10, 254, 0, 2], server4: [UInt8] = [93, 184, 216, 34], resolver4: [UInt8] = [10, 254, 0, 1]

    static func ethernet(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, UInt8(type >> 8), UInt8(type & 0xFF)] + payload
    }

    static func ipv4(_ source: [UInt8], _ destination: [UInt8], protocol kind: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let length = 20 + payload.count
        return [0x45, 0, UInt8(length >> 8), UInt8(length & 0xFF), 0, 1, 0, 0, 64, kind, 0, 0] + source + destination + payload
    }

    static func tcp(_ source: UInt16, _ destination: UInt16, sequence: UInt32, flags: UInt8 = 0x18, _ payload: [UInt8] = []) -> [UInt8] {
        [UInt8(source >> 8), UInt8(source & 0xFF), UInt8(destination >> 8), UInt8(destination & 0xFF),
         UInt8(sequence >> 24), UInt8((sequence >> 16) & 0xFF), UInt8((sequence >> 8) & 0xFF), UInt8(sequence & 0xFF),
         0, 0, 0, 0, 0x50, flags, 0xFF, 0xFF, 0, 0, 0, 0] + payload
    }

    static func udp(_ source: UInt16, _ destination: UInt16, _ payload: [UInt8]) -> [UInt8] {
        let length = 8 + payload.count
        return [UInt8(source >> 8), UInt8(source & 0xFF), UInt8(destination >> 8), UInt8(destination & 0xFF),
                UInt8(length >> 8), UInt8(length & 0xFF), 0, 0] + payload
    }

    /// A response for `name` with one A record (its name a compression pointer to the question).
    static func dnsAnswer(_ name: String, _ address: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        bytes += [0, 0, 1, 0, 1]
        bytes += [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
        return bytes
    }

    func trace(_ frames: [([UInt8], PacketDirection)]) throws -> PcapngReader {
        var bytes = writer.sectionHeader(application: "linkcond", system: nil, comment: nil)
            + writer.interface(.ethernet, snapLength: 262_144, name: "eth0", description: nil)
            + writer.interface(.notes, snapLength: 65_535, name: "linkcond", description: nil)
        bytes += writer.packet(interface: 1, nanoseconds: 1, data: Array("linkcond: Slow Net".utf8), length: 18)
        for (index, (frame, direction)) in frames.enumerated() {
            bytes += writer.packet(interface: 0, nanoseconds: UInt64(index + 2), data: frame, length: UInt32(frame.count), direction: direction)
        }
        return try PcapngReader(bytes)
    }

    @Test("peers with the names DNS gave them, their services, bytes each way, retransmissions, resets, plaintext HTTP")
    func summary() throws {
        let get = Array("GET /login?user=a HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n".utf8)
        let frames: [([UInt8], PacketDirection)] = [
            (Self.ethernet(0x0800, Self.ipv4(Self.local4, Self.resolver4, protocol: 17, Self.udp(40000, 53, [1, 2, 3]))), .outbound),
            (Self.ethernet(0x0800, Self.ipv4(Self.resolver4, Self.local4, protocol: 17, Self.udp(53, 40000, Self.dnsAnswer("Example.com", Self.server4)))), .inbound),
            (Self.ethernet(0x0800, Self.ipv4(Self.local4, Self.server4, protocol: 6, Self.tcp(50000, 80, sequence: 1000, get))), .outbound),
            (Self.ethernet(0x0800, Self.ipv4(Self.local4, Self.server4, protocol: 6, Self.tcp(50000, 80, sequence: 1000, get))), .outbound),
            (Self.ethernet(0x0800, Self.ipv4(Self.server4, Self.local4, protocol: 6, Self.tcp(80, 50000, sequence: 7, flags: 0x04))), .inbound),
        ]
        let summary = TraceSummary(try trace(frames))
        #expect(summary.peers.map(\.address) == ["10.254.0.1", "93.184.216.34"])
        let server = try #require(summary.peers.last)
        #expect(server.names == ["example.com"] && server.services == ["tcp/80"])
        #expect(server.packetsOut == 2 && server.packetsIn == 1 && server.retransmissions == 1 && server.resets == 1)
        #expect(summary.peers.first?.services == ["udp/53"])
        #expect(summary.plaintextHTTP == [TraceSummary.PlaintextRequest(method: "GET", host: "example.com", path: "/login?user=a", peer: "93.184.216.34")])
        #expect(summary.unreadable == 0)
    }

    @Test("IPv6 addresses as text, the longest run of zeros as ::")
    func ipv6Text() {
        #expect(IPPacket.text([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]) == "2001:db8::1")
        #expect(IPPacket.text([UInt8](repeating: 0, count: 16)) == "::")
        #expect(IPPacket.text([0xfd, 0x77, 0, 1] + [UInt8](repeating: 0, count: 10) + [0, 2]) == "fd77:1::2")
    }

    @Test("hostile frames are counted as unreadable, never trusted: short headers, a header length past the frame, DNS pointers in a loop")
    func hostile() throws {
        let frames: [([UInt8], PacketDirection)] = [
            ([0, 1, 2], .outbound),
            (Self.ethernet(0x0800, [0x4F, 0, 0, 20]), .outbound),
            (Self.ethernet(0x86DD, [0x60, 0, 0, 0]), .inbound),
        ]
        let summary = TraceSummary(try trace(frames))
        #expect(summary.unreadable == 3 && summary.peers.isEmpty)
        // A name whose pointer points at itself.
        #expect(DNSAnswers.name(in: [0xC0, 0], at: 0) == nil)
        let looping: [UInt8] = [0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xC0, 12]
        #expect(DNSAnswers.read(looping[...]).isEmpty)
    }

    @Test("text from packets is shown, not run: a terminal's escape sequences and other control characters become ?")
    func controlCharacters() throws {
        let get = Array("GET /a\u{1B}[2J HTTP/1.1\r\nHost: evil\u{1B}]0;x\u{07}.example\r\n\r\n".utf8)
        let frame = Self.ethernet(0x0800, Self.ipv4(Self.local4, Self.server4, protocol: 6, Self.tcp(50000, 80, sequence: 1, get)))
        let summary = TraceSummary(try trace([(frame, .outbound)]))
        let request = try #require(summary.plaintextHTTP.first)
        #expect(request.path == "/a?[2J" && request.host == "evil?]0;x?.example")
        #expect(TraceSummary.printable(String(repeating: "x", count: 400)).count == TraceSummary.longestText)
    }
}
