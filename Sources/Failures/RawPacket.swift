import Glibc

/// Packets built whole, IP header included, and sent through a raw socket: a DNS answer from an
/// address and port a server of this machine holds (`AnswerDatagram`), a reset's probe from a
/// far end's address (`ResetProbe`).
enum RawPacket {
    /// Sends `packet` (from its IP header on) to `destination`, with the socket mark `mark` if
    /// one is given; 0, or the errno.
    static func send(_ packet: [UInt8], to destination: [UInt8], mark: UInt32? = nil) -> Int32 {
        let family = destination.count == 4 ? AF_INET : AF_INET6
        // IPPROTO_RAW: the packet carries its own IP header (IP_HDRINCL, and IPv6's likewise).
        let descriptor = socket(family, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(IPPROTO_RAW))
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        if var mark, setsockopt(descriptor, SOL_SOCKET, SO_MARK, &mark, socklen_t(MemoryLayout<UInt32>.size)) != 0 { return errno }
        let to = SocketAddress(destination, port: 0)
        let sent = to.withPointer { address, length in packet.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, 0, address, length) } }
        return sent == packet.count ? 0 : errno
    }

    /// The IP header of a packet of `payloadLength` bytes of `protocolNumber` from `source` to
    /// `destination`: IPv4 (no options, DF, TTL 64; the kernel fills its id and checksum) or IPv6.
    static func header(from source: [UInt8], to destination: [UInt8], protocolNumber: UInt8, payloadLength: Int) -> [UInt8] {
        if source.count == 4 {
            return [0x45, 0] + bigEndian(UInt16(20 + payloadLength)) + [0, 0, 0x40, 0, 64, protocolNumber, 0, 0] + source + destination
        }
        return [0x60, 0, 0, 0] + bigEndian(UInt16(payloadLength)) + [protocolNumber, 64] + source + destination
    }

    /// The transport checksum of `segment` (its checksum field zero) from `source` to
    /// `destination`, over the pseudo-header of its IP version. Never 0, which would say "none".
    static func transportChecksum(_ segment: [UInt8], from source: [UInt8], to destination: [UInt8], protocolNumber: UInt8) -> UInt16 {
        let length = segment.count
        let pseudoHeader = source + destination
            + (source.count == 4 ? [0, protocolNumber] + bigEndian(UInt16(length)) : bigEndian(UInt32(length)) + [0, 0, 0, protocolNumber])
        let checksum = internetChecksum(pseudoHeader + segment)
        return checksum == 0 ? 0xFFFF : checksum
    }

    /// The Internet checksum (RFC 1071) of `bytes`: the ones' complement of their ones'
    /// complement sum in 16-bit words, an odd last byte padded with zero.
    static func internetChecksum(_ bytes: [UInt8]) -> UInt16 {
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

    static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func bigEndian(_ value: UInt32) -> [UInt8] { bigEndian(UInt16(value >> 16)) + bigEndian(UInt16(value & 0xFFFF)) }
}
