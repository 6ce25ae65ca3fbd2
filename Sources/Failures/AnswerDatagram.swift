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
        var udp = RawPacket.bigEndian(query.destinationPort) + RawPacket.bigEndian(query.sourcePort) + RawPacket.bigEndian(UInt16(udpLength)) + [0, 0] + payload
        let checksum = RawPacket.transportChecksum(udp, from: query.destination, to: query.source, protocolNumber: 17)
        udp.replaceSubrange(6..<8, with: RawPacket.bigEndian(checksum))
        bytes = RawPacket.header(from: query.destination, to: query.source, protocolNumber: 17, payloadLength: udpLength) + udp
    }
}
