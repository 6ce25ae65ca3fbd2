/// A UDP datagram built whole, IP header included, as an answer to a queued one: from its
/// destination's address and port to its source's. What the responder sends through a raw
/// socket when it cannot bind the address and port the query went to (a resolver on this very
/// machine holds them: a gateway's own `dnsmasq`).
package struct AnswerDatagram: Equatable {
    /// The packet, from its IP header on.
    package let bytes: [UInt8]

    /// `nil` when the payload would not fit one datagram.
    package init?(answering query: QueuedDatagram, payload: [UInt8]) {
        let udpLength = 8 + payload.count
        guard udpLength <= Int(UInt16.max) - 40 else { return nil }
        var udp = Self.bigEndian(query.destinationPort) + Self.bigEndian(query.sourcePort) + Self.bigEndian(UInt16(udpLength)) + [0, 0] + payload
        let pseudoHeader = query.destination + query.source
            + (query.version == 4 ? [0, 17] + Self.bigEndian(UInt16(udpLength)) : Self.bigEndian(UInt32(udpLength)) + [0, 0, 0, 17])
        var checksum = Self.checksum(pseudoHeader + udp)
        // A computed 0 is sent as all ones: 0 would say "no checksum", which IPv6 forbids.
        if checksum == 0 { checksum = 0xFFFF }
        udp.replaceSubrange(6..<8, with: Self.bigEndian(checksum))
        let header: [UInt8]
        if query.version == 4 {
            // Version 4, five words; no options; DF; TTL 64; UDP. The kernel fills the id and the
            // header checksum of a raw socket's packet.
            header = [0x45, 0] + Self.bigEndian(UInt16(20 + udpLength)) + [0, 0, 0x40, 0, 64, 17, 0, 0] + query.destination + query.source
        } else {
            // Version 6, no traffic class or flow label; UDP; hop limit 64.
            header = [0x60, 0, 0, 0] + Self.bigEndian(UInt16(udpLength)) + [17, 64] + query.destination + query.source
        }
        bytes = header + udp
    }

    /// The Internet checksum (RFC 1071) of `bytes`: the ones' complement of their ones'
    /// complement sum in 16-bit words, an odd last byte padded with zero.
    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    private static func bigEndian(_ value: UInt32) -> [UInt8] { bigEndian(UInt16(value >> 16)) + bigEndian(UInt16(value & 0xFFFF)) }
}
