/// The UDP datagram in a packet netfilter queued, read from its IP header on: who sent it to
/// whom. `nil` for anything else (another protocol, a fragment, an IPv6 extension header, a
/// packet cut short), which passes on unchanged.
public struct QueuedDatagram: Equatable, Sendable {
    /// 4 or 6.
    public var version: UInt8
    public var source: [UInt8]
    public var destination: [UInt8]
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    /// The UDP payload, as far as the queue copied it.
    public var payload: ArraySlice<UInt8>

    public init?(packet: ArraySlice<UInt8>) {
        let start = packet.startIndex
        guard let first = packet.first else { return nil }
        let headerLength: Int
        switch first >> 4 {
        case 4:
            headerLength = Int(first & 0x0F) * 4
            guard headerLength >= 20, packet.count >= headerLength + 8, packet[start + 9] == 17 else { return nil }
            // More fragments, or a fragment's offset: not a whole datagram.
            let fragment = UInt16(packet[start + 6]) << 8 | UInt16(packet[start + 7])
            guard fragment & 0x3FFF == 0 else { return nil }
            version = 4
            source = Array(packet[(start + 12)..<(start + 16)])
            destination = Array(packet[(start + 16)..<(start + 20)])
        case 6:
            headerLength = 40
            guard packet.count >= headerLength + 8, packet[start + 6] == 17 else { return nil }
            version = 6
            source = Array(packet[(start + 8)..<(start + 24)])
            destination = Array(packet[(start + 24)..<(start + 40)])
        default:
            return nil
        }
        let udp = start + headerLength
        sourcePort = UInt16(packet[udp]) << 8 | UInt16(packet[udp + 1])
        destinationPort = UInt16(packet[udp + 2]) << 8 | UInt16(packet[udp + 3])
        payload = packet[(udp + 8)...]
    }
}
