@testable import Failures
import Profiles
import Testing

/// The responder's reading of hostile bytes: a queued packet's headers, the DNS query in it, and
/// the answer that fails it.
@Suite("DNS queries the responder answers")
struct DNSQueryTests {
    static func query(_ name: String, type: UInt16 = 1, id: UInt16 = 0xBEEF, flags: UInt16 = 0x0100, questions: UInt16 = 1) -> [UInt8] {
        var bytes: [UInt8] = []
        for word in [id, flags, questions, 0, 0, 0] { bytes += [UInt8(word >> 8), UInt8(word & 0xFF)] }
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return bytes + [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
    }

    static func ipv4(_ payload: [UInt8], fragment: UInt16 = 0, protocol kind: UInt8 = 17) -> [UInt8] {
        let length = 28 + payload.count
        return [0x45, 0, UInt8(length >> 8), UInt8(length & 0xFF), 0, 1, UInt8(fragment >> 8), UInt8(fragment & 0xFF), 64, kind, 0, 0,
                10, 0, 0, 2, 10, 0, 0, 53, 0x9C, 0x40, 0, 53, UInt8((8 + payload.count) >> 8), UInt8((8 + payload.count) & 0xFF), 0, 0] + payload
    }

    @Test("a query's id, RD bit, lowercased name and question; the answer repeats them with the code")
    func query() throws {
        let bytes = Self.query("API.Example.com", type: 28)
        let query = try #require(DNSQuery(parsing: bytes[...]))
        #expect(query.id == 0xBEEF && query.recursionDesired && query.name == "api.example.com")
        #expect(Array(query.question) == Array(bytes[12...]))
        let answer = query.answer(code: 3)
        #expect(answer.count == bytes.count)
        #expect(answer[0...3] == [0xBE, 0xEF, 0x81, 0x83])
        #expect(answer[4...11] == [0, 1, 0, 0, 0, 0, 0, 0])
        #expect(Array(answer[12...]) == Array(bytes[12...]))
        #expect(query.answer(code: 2)[3] == 0x82)
    }

    @Test("not a query for one name: an answer, another opcode, two questions, a compressed or overlong name, cut short")
    func notQueries() {
        #expect(DNSQuery(parsing: Self.query("a.example", flags: 0x8180)[...]) == nil)
        #expect(DNSQuery(parsing: Self.query("a.example", flags: 0x2800)[...]) == nil)
        #expect(DNSQuery(parsing: Self.query("a.example", questions: 2)[...]) == nil)
        var compressed = Self.query("a.example")
        compressed.replaceSubrange(12..<23, with: [0xC0, 0x0C])
        #expect(DNSQuery(parsing: compressed[...]) == nil)
        let long = (0..<5).map { _ in String(repeating: "a", count: 63) }.joined(separator: ".")
        #expect(DNSQuery(parsing: Self.query(long)[...]) == nil)
        let whole = Self.query("a.example")
        for cut in 0..<whole.count {
            #expect(DNSQuery(parsing: whole[..<cut]) == nil)
        }
        #expect(DNSQuery(parsing: whole.dropFirst(3).dropLast(0)) == nil)
    }

    @Test("a slice that does not start at zero reads the same")
    func slices() throws {
        let padded = [9, 9, 9] + Self.query("x.example")
        #expect(try #require(DNSQuery(parsing: padded[3...])).name == "x.example")
    }

    @Test("the queued packet's addresses, ports and payload; IPv6 too; fragments and other protocols are not datagrams")
    func datagrams() throws {
        let payload = Self.query("a.example")
        let v4 = try #require(QueuedDatagram(packet: Self.ipv4(payload)[...]))
        #expect(v4.version == 4 && v4.source == [10, 0, 0, 2] && v4.destination == [10, 0, 0, 53])
        #expect(v4.sourcePort == 40000 && v4.destinationPort == 53 && Array(v4.payload) == payload)
        #expect(QueuedDatagram(packet: Self.ipv4(payload, fragment: 0x2000)[...]) == nil)
        #expect(QueuedDatagram(packet: Self.ipv4(payload, protocol: 6)[...]) == nil)
        var v6: [UInt8] = [0x60, 0, 0, 0, 0, UInt8(8 + payload.count), 17, 64]
        v6 += [UInt8](repeating: 0, count: 15) + [2] + [UInt8](repeating: 0, count: 15) + [0x35]
        v6 += [0x9C, 0x40, 0, 53, 0, UInt8(8 + payload.count), 0, 0] + payload
        let parsed = try #require(QueuedDatagram(packet: v6[...]))
        #expect(parsed.version == 6 && parsed.destination.last == 0x35 && Array(parsed.payload) == payload)
        v6[6] = 0  // a hop-by-hop header first
        #expect(QueuedDatagram(packet: v6[...]) == nil)
        for cut in 0..<28 {
            #expect(QueuedDatagram(packet: Self.ipv4(payload)[..<cut]) == nil)
        }
        #expect(QueuedDatagram(packet: [0x4F][...]) == nil)
    }

    @Test("netlink's queued-packet messages: the id and payload of each, anything malformed skipped")
    func netlinkMessages() {
        func attribute(_ kind: UInt16, _ value: [UInt8]) -> [UInt8] {
            let length = 4 + value.count
            return [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(kind), 0] + value + [UInt8](repeating: 0, count: (4 - length % 4) % 4)
        }
        let attributes = attribute(1, [0, 0, 0, 7, 0x08, 0x00, 3]) + attribute(10, [1, 2, 3, 4, 5])
        let length = 20 + attributes.count
        let message: [UInt8] = [UInt8(length), 0, 0, 0, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0x6C, 0x00] + attributes
        let packets = NetfilterQueue.packets(in: (message + message)[...])
        #expect(packets.count == 2)
        #expect(packets.first?.id == 7 && packets.first.map { Array($0.bytes) } == [1, 2, 3, 4, 5])
        // A length beyond the datagram, and one too small: nothing read, no trap.
        var lying = message
        lying[0] = 255
        #expect(NetfilterQueue.packets(in: lying[...]).isEmpty)
        lying[0] = 3
        #expect(NetfilterQueue.packets(in: lying[...]).isEmpty)
        for cut in 0..<message.count {
            _ = NetfilterQueue.packets(in: message[..<cut])
        }
    }
}
