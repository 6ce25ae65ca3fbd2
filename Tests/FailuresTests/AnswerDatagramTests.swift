@testable import Failures
import Testing

@Suite("An answer built whole, for a raw socket")
struct AnswerDatagramTests {
    /// A query from 10.80.1.10:40000 to 10.80.1.1:53 (or the IPv6 pair), as the queue hands it over.
    static func query(version: UInt8) -> QueuedDatagram {
        let (source, destination): ([UInt8], [UInt8]) = version == 4
            ? ([10, 80, 1, 10], [10, 80, 1, 1])
            : ([0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [10], [0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [1])
        let udp: [UInt8] = [0x9C, 0x40, 0, 53, 0, 11, 0, 0, 1, 2, 3]
        let header: [UInt8] = version == 4
            ? [0x45, 0, 0, 31, 0, 0, 0, 0, 64, 17, 0, 0] + source + destination
            : [0x60, 0, 0, 0, 0, 11, 17, 64] + source + destination
        return QueuedDatagram(packet: ArraySlice(header + udp))!
    }

    @Test("RFC 1071's example sums to 0x220d; an odd byte is padded")
    func checksum() {
        #expect(RawPacket.internetChecksum([0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]) == 0x220D)
        #expect(RawPacket.internetChecksum([0x00, 0x01, 0xF2]) == ~UInt16(0xF201))
    }

    @Test("from the query's destination and port to its source, and a UDP checksum a receiver verifies", arguments: [UInt8(4), 6])
    func answer(version: UInt8) throws {
        let query = Self.query(version: version)
        let answer = try #require(AnswerDatagram(answering: query, payload: [0xAA, 0xBB, 0xCC]))
        let read = try #require(QueuedDatagram(packet: ArraySlice(answer.bytes)))
        #expect(read.source == query.destination && read.destination == query.source)
        #expect(read.sourcePort == 53 && read.destinationPort == 40000)
        #expect(Array(read.payload) == [0xAA, 0xBB, 0xCC])
        let headerLength = version == 4 ? 20 : 40
        let udp = Array(answer.bytes[headerLength...])
        #expect(udp[4...5] == [0, 11])
        let pseudoHeader = query.destination + query.source + (version == 4 ? [0, 17, 0, 11] : [0, 0, 0, 11, 0, 0, 0, 17])
        #expect(RawPacket.internetChecksum(pseudoHeader + udp) == 0)
        #expect(answer.bytes.count == headerLength + 11)
        if version == 4 {
            #expect(answer.bytes[2...3] == [0, 31] && answer.bytes[9] == 17)
        } else {
            #expect(answer.bytes[4...5] == [0, 11] && answer.bytes[6] == 17)
        }
    }

    @Test("a payload too large for one datagram is refused")
    func tooLarge() {
        #expect(AnswerDatagram(answering: Self.query(version: 4), payload: Array(repeating: 0, count: 65_500)) == nil)
    }
}
