/// A TCP segment that makes one end of a connection say where it is: a bare ACK whose sequence
/// number lies outside the receiving end's window, which it answers with an ACK of its own
/// (RFC 793; RFC 5961's challenge ACK) carrying the sequence numbers it expects. Sent in the far
/// end's name, through a raw socket, so that a device's reset is answered at once, at both ends.
struct ResetProbe: Equatable {
    /// The packet, from its IP header on.
    let bytes: [UInt8]

    /// From `source`:`sourcePort` to `destination`:`destinationPort` (addresses of one family),
    /// with `sequence` and `acknowledgement` numbers no window holds (any: the far end's are
    /// not known here, and one out of the window is answered the same way).
    init(from source: [UInt8], port sourcePort: UInt16, to destination: [UInt8], port destinationPort: UInt16, sequence: UInt32, acknowledgement: UInt32) {
        // Header of five words, ACK alone, a window of 1 024, no urgent pointer.
        var tcp = RawPacket.bigEndian(sourcePort) + RawPacket.bigEndian(destinationPort) + RawPacket.bigEndian(sequence) + RawPacket.bigEndian(acknowledgement)
            + [0x50, 0x10] + RawPacket.bigEndian(UInt16(1024)) + [0, 0, 0, 0]
        let checksum = RawPacket.transportChecksum(tcp, from: source, to: destination, protocolNumber: 6)
        tcp.replaceSubrange(16..<18, with: RawPacket.bigEndian(checksum))
        bytes = RawPacket.header(from: source, to: destination, protocolNumber: 6, payloadLength: tcp.count) + tcp
    }
}
