/// A DNS query as a resolver sends it, read from bytes nobody vouches for: the header and its
/// one question, no more. Anything else (an answer, another opcode, several questions, a
/// compressed or overlong name) is not a query linkcondd answers, and passes on unchanged.
public struct DNSQuery: Equatable, Sendable {
    public var id: UInt16
    /// The header's RD bit, which an answer repeats.
    public var recursionDesired: Bool
    /// The name asked for, lowercase, dots between labels, no final dot; empty for the root.
    public var name: String
    /// The question as it was sent (name, type, class), which an answer repeats byte for byte.
    public var question: ArraySlice<UInt8>

    /// A name's encoded length is at most 255 bytes; a label's at most 63.
    static let maximumNameBytes = 255
    static let headerBytes = 12

    /// Reads `message`, the payload of a UDP datagram to port 53; `nil` when it is not a query
    /// for exactly one name.
    public init?(parsing message: ArraySlice<UInt8>) {
        guard message.count >= Self.headerBytes + 5 else { return nil }
        let start = message.startIndex
        func word(_ offset: Int) -> UInt16 { UInt16(message[start + offset]) << 8 | UInt16(message[start + offset + 1]) }
        let flags = word(2)
        // QR must be 0 (a query) and the opcode 0 (a standard query).
        guard flags & 0x8000 == 0, (flags >> 11) & 0xF == 0 else { return nil }
        guard word(4) == 1, word(6) == 0, word(8) == 0 else { return nil }
        var position = start + Self.headerBytes
        var labels: [String] = []
        while true {
            guard position < message.endIndex else { return nil }
            let length = Int(message[position])
            // 0xC0 and above are compression pointers, 0x40–0xBF reserved: a query has neither.
            guard length <= 63 else { return nil }
            position += 1
            if length == 0 { break }
            guard message.endIndex - position >= length, position - start - Self.headerBytes + length <= Self.maximumNameBytes else { return nil }
            labels.append(String(decoding: message[position..<position + length].map(Self.lowercased), as: UTF8.self))
            position += length
        }
        // Type and class follow the name.
        guard message.endIndex - position >= 4 else { return nil }
        self.id = word(0)
        self.recursionDesired = flags & 0x0100 != 0
        self.name = labels.joined(separator: ".")
        self.question = message[(start + Self.headerBytes)..<(position + 4)]
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// The response that fails this query with `code` (2 server failure, 3 no such name): the
    /// query's id and question, recursion available, no records. Never longer than the query.
    public func answer(code: UInt8) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerBytes + question.count)
        let flags: UInt16 = 0x8000 | (recursionDesired ? 0x0100 : 0) | 0x0080 | UInt16(code & 0xF)
        for word in [id, flags, 1, 0, 0, 0] {
            bytes.append(UInt8(word >> 8))
            bytes.append(UInt8(word & 0xFF))
        }
        bytes.append(contentsOf: question)
        return bytes
    }
}
