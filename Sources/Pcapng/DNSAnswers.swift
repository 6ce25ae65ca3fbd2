/// The A and AAAA records of a DNS response: (address, the name asked), names followed through
/// compression pointers with a bound on the jumps.
enum DNSAnswers {
    static func read(_ message: ArraySlice<UInt8>) -> [(String, String)] {
        let bytes = Array(message)
        guard bytes.count >= 12, bytes[2] & 0x80 != 0 else { return [] }
        let questions = Int(ByteOrder.big.u16(bytes[...], 4))
        let answers = Int(ByteOrder.big.u16(bytes[...], 6))
        var offset = 12
        var asked: String?
        for _ in 0..<min(questions, 4) {
            guard let (name, next) = name(in: bytes, at: offset), next + 4 <= bytes.count else { return [] }
            asked = asked ?? name
            offset = next + 4
        }
        var found: [(String, String)] = []
        for _ in 0..<min(answers, 32) {
            guard let (_, next) = name(in: bytes, at: offset), next + 10 <= bytes.count else { break }
            let type = ByteOrder.big.u16(bytes[...], next)
            let length = Int(ByteOrder.big.u16(bytes[...], next + 8))
            let data = next + 10
            guard data + length <= bytes.count else { break }
            if let asked, (type == 1 && length == 4) || (type == 28 && length == 16) {
                found.append((IPPacket.text(Array(bytes[data..<(data + length)])), asked))
            }
            offset = data + length
        }
        return found
    }

    /// The name at `offset` (lower case, dotted) and the offset after it where it is written.
    static func name(in bytes: [UInt8], at offset: Int) -> (String, Int)? {
        var labels: [String] = []
        var position = offset
        var after: Int?
        var jumps = 0
        var length = 0
        while position < bytes.count {
            let size = Int(bytes[position])
            if size == 0 {
                let name = labels.joined(separator: ".").lowercased()
                return (name, after ?? position + 1)
            }
            if size & 0xC0 == 0xC0 {
                guard position + 1 < bytes.count, jumps < 16 else { return nil }
                after = after ?? position + 2
                position = (size & 0x3F) << 8 | Int(bytes[position + 1])
                jumps += 1
                continue
            }
            guard size <= 63, position + 1 + size <= bytes.count else { return nil }
            length += size + 1
            guard length <= 255 else { return nil }
            labels.append(TraceSummary.printable(String(decoding: bytes[(position + 1)...(position + size)], as: UTF8.self)))
            position += 1 + size
        }
        return nil
    }
}
