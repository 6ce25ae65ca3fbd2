/// Reads pcapng, every byte hostile: each length is checked against what is left before it is
/// used, a block's two lengths must agree, and nothing is allocated beyond the input's size.
/// Either byte order; sections after the first are read as well; blocks of other types are
/// skipped.
public struct PcapngReader: Sendable {
    public struct Interface: Sendable, Equatable {
        public var link: UInt16
        public var snapLength: UInt32
        public var name: String?
        public var description: String?
        /// Ticks a second of its timestamps (`if_tsresol`; 10⁶ when it does not say).
        public var ticksPerSecond: UInt64
    }

    public struct Packet: Sendable, Equatable {
        /// Index into `interfaces`.
        public var interface: Int
        public var nanoseconds: UInt64
        public var data: ArraySlice<UInt8>
        public var length: UInt32
        public var direction: PacketDirection
        public var comments: [String]
    }

    public struct Statistics: Sendable, Equatable {
        public var interface: Int
        public var received: UInt64?
        public var interfaceDropped: UInt64?
        public var systemDropped: UInt64?
        public var delivered: UInt64?
        public var comments: [String]
    }

    public var interfaces: [Interface] = []
    public var packets: [Packet] = []
    public var statistics: [Statistics] = []
    public var sectionComments: [String] = []
    public var application: String?

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notPcapng
        case truncated(at: Int)
        case malformed(at: Int, String)

        public var description: String {
            switch self {
            case .notPcapng: "not a pcapng file (no section header block first)"
            case .truncated(let offset): "the trace ends inside a block at byte \(offset)"
            case .malformed(let offset, let why): "the block at byte \(offset): \(why)"
            }
        }
    }

    /// Reads `bytes` whole. With `allowingTruncatedEnd`, a last block cut short (a capture
    /// stopped mid-write) ends the reading instead of failing it.
    public init(_ input: [UInt8], allowingTruncatedEnd: Bool = false) throws(Failure) {
        let bytes = input[...]
        var offset = 0
        var order = ByteOrder.little
        var sectionStart = 0
        guard bytes.count >= 12, ByteOrder.little.u32(bytes, 0) == PcapngFormat.sectionHeader else { throw .notPcapng }
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else {
                if allowingTruncatedEnd { return }
                throw .truncated(at: offset)
            }
            // The section header's type reads the same in both orders; its magic says which.
            if ByteOrder.little.u32(bytes, offset) == PcapngFormat.sectionHeader {
                let magic = ByteOrder.little.u32(bytes, offset + 8)
                if magic == PcapngFormat.byteOrderMagic {
                    order = .little
                } else if magic == PcapngFormat.byteOrderMagic.byteSwapped {
                    order = .big
                } else {
                    throw .malformed(at: offset, "a section header with byte-order magic \(magic)")
                }
            }
            let type = order.u32(bytes, offset)
            let length = Int(order.u32(bytes, offset + 4))
            guard length >= 12, length % 4 == 0 else { throw .malformed(at: offset, "a block length of \(length)") }
            guard length <= bytes.count - offset else {
                if allowingTruncatedEnd { return }
                throw .truncated(at: offset)
            }
            guard Int(order.u32(bytes, offset + length - 4)) == length else {
                throw .malformed(at: offset, "its two lengths differ")
            }
            let body = bytes[(offset + 8)..<(offset + length - 4)]
            switch type {
            case PcapngFormat.sectionHeader:
                sectionStart = interfaces.count
                try readSectionHeader(body, order: order, at: offset)
            case PcapngFormat.interfaceDescription:
                try readInterface(body, order: order, at: offset)
            case PcapngFormat.enhancedPacket:
                try readPacket(body, order: order, at: offset, sectionStart: sectionStart)
            case PcapngFormat.interfaceStatistics:
                try readStatistics(body, order: order, at: offset, sectionStart: sectionStart)
            default:
                break
            }
            offset += length
        }
    }

    private mutating func readSectionHeader(_ body: ArraySlice<UInt8>, order: ByteOrder, at offset: Int) throws(Failure) {
        guard body.count >= 16 else { throw .malformed(at: offset, "a section header of \(body.count) bytes") }
        for (code, value) in try Self.options(body.dropFirst(16), order: order, at: offset) {
            switch code {
            case PcapngFormat.comment: sectionComments.append(Self.text(value))
            case PcapngFormat.userApplication: application = Self.text(value)
            default: break
            }
        }
    }

    private mutating func readInterface(_ body: ArraySlice<UInt8>, order: ByteOrder, at offset: Int) throws(Failure) {
        guard body.count >= 8 else { throw .malformed(at: offset, "an interface description of \(body.count) bytes") }
        let start = body.startIndex
        var interface = Interface(
            link: order.u16(body, start), snapLength: order.u32(body, start + 4), name: nil, description: nil, ticksPerSecond: 1_000_000
        )
        for (code, value) in try Self.options(body.dropFirst(8), order: order, at: offset) {
            switch code {
            case PcapngFormat.interfaceName: interface.name = Self.text(value)
            case PcapngFormat.interfaceDescriptionText: interface.description = Self.text(value)
            case PcapngFormat.timestampResolution:
                guard let resolution = value.first else { throw .malformed(at: offset, "an empty if_tsresol") }
                interface.ticksPerSecond = try Self.ticks(resolution, at: offset)
            default: break
            }
        }
        interfaces.append(interface)
    }

    private mutating func readPacket(_ body: ArraySlice<UInt8>, order: ByteOrder, at offset: Int, sectionStart: Int) throws(Failure) {
        guard body.count >= 20 else { throw .malformed(at: offset, "a packet block of \(body.count) bytes") }
        let start = body.startIndex
        let index = sectionStart + Int(order.u32(body, start))
        guard index < interfaces.count else { throw .malformed(at: offset, "a packet of interface \(index - sectionStart), which is not described") }
        let ticks = UInt64(order.u32(body, start + 4)) << 32 | UInt64(order.u32(body, start + 8))
        let captured = Int(order.u32(body, start + 12))
        guard captured <= body.count - 20 else { throw .malformed(at: offset, "\(captured) bytes captured in a block of \(body.count)") }
        var packet = Packet(
            interface: index, nanoseconds: Self.nanoseconds(ticks, ticksPerSecond: interfaces[index].ticksPerSecond),
            data: body[(start + 20)..<(start + 20 + captured)], length: order.u32(body, start + 16), direction: .unknown, comments: []
        )
        let optionsStart = 20 + PcapngFormat.padded(captured)
        guard optionsStart <= body.count else { throw .malformed(at: offset, "its packet's padding runs past the block") }
        for (code, value) in try Self.options(body.dropFirst(optionsStart), order: order, at: offset) {
            switch code {
            case PcapngFormat.comment: packet.comments.append(Self.text(value))
            case PcapngFormat.packetFlags where value.count == 4:
                packet.direction = PacketDirection(rawValue: order.u32(value, value.startIndex) & 0x3) ?? .unknown
            default: break
            }
        }
        packets.append(packet)
    }

    private mutating func readStatistics(_ body: ArraySlice<UInt8>, order: ByteOrder, at offset: Int, sectionStart: Int) throws(Failure) {
        guard body.count >= 12 else { throw .malformed(at: offset, "a statistics block of \(body.count) bytes") }
        let index = sectionStart + Int(order.u32(body, body.startIndex))
        guard index < interfaces.count else { throw .malformed(at: offset, "statistics of interface \(index - sectionStart), which is not described") }
        var counts = Statistics(interface: index, comments: [])
        for (code, value) in try Self.options(body.dropFirst(12), order: order, at: offset) {
            let number = value.count == 8 ? order.u64(value, value.startIndex) : nil
            switch code {
            case PcapngFormat.comment: counts.comments.append(Self.text(value))
            case PcapngFormat.interfaceReceived: counts.received = number
            case PcapngFormat.interfaceDropped: counts.interfaceDropped = number
            case PcapngFormat.systemDropped: counts.systemDropped = number
            case PcapngFormat.deliveredToUser: counts.delivered = number
            default: break
            }
        }
        statistics.append(counts)
    }

    /// A block's options, up to `opt_endofopt` or the body's end.
    private static func options(_ bytes: ArraySlice<UInt8>, order: ByteOrder, at offset: Int) throws(Failure) -> [(UInt16, ArraySlice<UInt8>)] {
        var found: [(UInt16, ArraySlice<UInt8>)] = []
        var index = bytes.startIndex
        while bytes.endIndex - index >= 4 {
            let code = order.u16(bytes, index)
            let length = Int(order.u16(bytes, index + 2))
            if code == PcapngFormat.endOfOptions { break }
            guard PcapngFormat.padded(length) <= bytes.endIndex - index - 4 else {
                throw .malformed(at: offset, "option \(code) of \(length) bytes runs past its block")
            }
            found.append((code, bytes[(index + 4)..<(index + 4 + length)]))
            index += 4 + PcapngFormat.padded(length)
        }
        return found
    }

    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// `if_tsresol`: a power of ten (high bit clear) or of two (set).
    private static func ticks(_ resolution: UInt8, at offset: Int) throws(Failure) -> UInt64 {
        let exponent = UInt64(resolution & 0x7F)
        if resolution & 0x80 != 0 {
            guard exponent < 64 else { throw .malformed(at: offset, "if_tsresol 2^-\(exponent)") }
            return 1 << exponent
        }
        guard exponent <= 19 else { throw .malformed(at: offset, "if_tsresol 10^-\(exponent)") }
        var ticks: UInt64 = 1
        for _ in 0..<exponent { ticks *= 10 }
        return ticks
    }

    private static func nanoseconds(_ ticks: UInt64, ticksPerSecond: UInt64) -> UInt64 {
        let seconds = ticks / ticksPerSecond
        let rest = ticks % ticksPerSecond
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        // rest < ticksPerSecond ≤ 10^19: its product with 10^9 may overflow 64 bits; 128 do not.
        let fraction = UInt64((UInt128(rest) * 1_000_000_000) / UInt128(ticksPerSecond))
        return whole.addingReportingOverflow(fraction).overflow ? .max : whole + fraction
    }
}

/// Numbers in a section's byte order (or a packet header's: `big`), read at absolute indices of
/// a slice (an `ArraySlice` keeps its base array's indices); callers check the bounds first.
package enum ByteOrder {
    case little, big

    package func u16(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt16 {
        let first = UInt16(bytes[at]), second = UInt16(bytes[at + 1])
        return self == .little ? first | second << 8 : first << 8 | second
    }

    package func u32(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        let first = UInt32(u16(bytes, at)), second = UInt32(u16(bytes, at + 2))
        return self == .little ? first | second << 16 : first << 16 | second
    }

    package func u64(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt64 {
        let first = UInt64(u32(bytes, at)), second = UInt64(u32(bytes, at + 4))
        return self == .little ? first | second << 32 : first << 32 | second
    }
}
