// The headers a trace's summary reads, each only within the bytes captured.

/// An IPv4 or IPv6 packet inside an Ethernet frame (with at most two VLAN tags), read within
/// the bytes captured.
struct IPPacket {
    enum Transport {
        case tcp(TCPSegment)
        case udp(UDPDatagram)
        case icmp
        case other(UInt8)
    }

    var source: [UInt8]
    var destination: [UInt8]
    var transport: Transport
    var isIPv6: Bool { source.count == 16 }

    init?(ethernet frame: ArraySlice<UInt8>) {
        var offset = frame.startIndex + 12
        var type = Self.u16(frame, offset)
        var tags = 0
        while let current = type, current == 0x8100 || current == 0x88A8, tags < 2 {
            offset += 4
            type = Self.u16(frame, offset)
            tags += 1
        }
        offset += 2
        guard let type, offset <= frame.endIndex else { return nil }
        let rest = frame[offset...]
        switch type {
        case 0x0800: self.init(ipv4: rest)
        case 0x86DD: self.init(ipv6: rest)
        default: return nil
        }
    }

    private init?(ipv4 bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= 20, bytes[start] >> 4 == 4 else { return nil }
        let headerLength = Int(bytes[start] & 0x0F) * 4
        guard headerLength >= 20, bytes.count >= headerLength else { return nil }
        source = Array(bytes[(start + 12)..<(start + 16)])
        destination = Array(bytes[(start + 16)..<(start + 20)])
        let fragmentOffset = ByteOrder.big.u16(bytes, start + 6) & 0x1FFF
        let payload = bytes[(start + headerLength)...]
        // A later fragment has no transport header of its own.
        transport = fragmentOffset == 0 ? Self.transport(bytes[start + 9], payload) : .other(bytes[start + 9])
    }

    private init?(ipv6 bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= 40, bytes[start] >> 4 == 6 else { return nil }
        source = Array(bytes[(start + 8)..<(start + 24)])
        destination = Array(bytes[(start + 24)..<(start + 40)])
        var next = bytes[start + 6]
        var offset = start + 40
        // Hop-by-hop, routing and destination options: skipped; a fragment's header too, when
        // it is the first fragment.
        for _ in 0..<8 {
            switch next {
            case 0, 43, 60:
                guard bytes.endIndex - offset >= 8 else { return nil }
                next = bytes[offset]
                offset += (Int(bytes[offset + 1]) + 1) * 8
            case 44:
                guard bytes.endIndex - offset >= 8 else { return nil }
                let fragmentOffset = ByteOrder.big.u16(bytes, offset + 2) >> 3
                next = bytes[offset]
                offset += 8
                if fragmentOffset != 0 {
                    transport = .other(next)
                    return
                }
            default:
                guard offset <= bytes.endIndex else { return nil }
                transport = Self.transport(next, bytes[offset...])
                return
            }
        }
        return nil
    }

    private static func transport(_ number: UInt8, _ payload: ArraySlice<UInt8>) -> Transport {
        switch number {
        case 6: TCPSegment(payload).map { .tcp($0) } ?? .other(6)
        case 17: UDPDatagram(payload).map { .udp($0) } ?? .other(17)
        case 1, 58: .icmp
        default: .other(number)
        }
    }

    static func u16(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt16? {
        guard at >= bytes.startIndex, bytes.endIndex - at >= 2 else { return nil }
        return ByteOrder.big.u16(bytes, at)
    }

    static func text(_ address: [UInt8]) -> String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        for index in stride(from: 0, to: address.count, by: 2) {
            groups.append(String(ByteOrder.big.u16(address[...], index), radix: 16))
        }
        // The longest run of zero groups (two or more) becomes `::`.
        var best: Range<Int>?
        var index = 0
        while index < groups.count {
            guard groups[index] == "0" else { index += 1; continue }
            let start = index
            while index < groups.count, groups[index] == "0" { index += 1 }
            if index - start >= 2, (best.map { index - start > $0.count } ?? true) { best = start..<index }
        }
        guard let best else { return groups.joined(separator: ":") }
        return groups[..<best.lowerBound].joined(separator: ":") + "::" + groups[best.upperBound...].joined(separator: ":")
    }
}

struct TCPSegment {
    var sourcePort: UInt16
    var destinationPort: UInt16
    var sequence: UInt32
    var reset: Bool
    var payload: ArraySlice<UInt8>

    init?(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= 20 else { return nil }
        let offset = Int(bytes[start + 12] >> 4) * 4
        guard offset >= 20, bytes.count >= offset else { return nil }
        sourcePort = ByteOrder.big.u16(bytes, start)
        destinationPort = ByteOrder.big.u16(bytes, start + 2)
        sequence = ByteOrder.big.u32(bytes, start + 4)
        reset = bytes[start + 13] & 0x04 != 0
        payload = bytes[(start + offset)...]
    }
}

struct UDPDatagram {
    var sourcePort: UInt16
    var destinationPort: UInt16
    var payload: ArraySlice<UInt8>

    init?(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= 8 else { return nil }
        sourcePort = ByteOrder.big.u16(bytes, start)
        destinationPort = ByteOrder.big.u16(bytes, start + 2)
        payload = bytes[(start + 8)...]
    }
}
