/// The request line and Host of an HTTP/1.x request that begins a segment.
struct HTTPRequestHead {
    static let methods = ["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"]

    var method: String
    var path: String
    var host: String?

    init?(_ payload: ArraySlice<UInt8>) {
        let head = payload.prefix(2_048)
        // Lines by their bytes: to a String, "\r\n" is one character, not a "\n".
        let lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        guard lines.count > 1, let line = lines.first else { return nil }
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, Self.methods.contains(String(parts[0])), parts[2].hasPrefix("HTTP/1.") else { return nil }
        method = String(parts[0])
        path = TraceSummary.printable(parts[1])
        for field in lines.dropFirst() {
            let pair = field.split(separator: ":", maxSplits: 1)
            if pair.count == 2, pair[0].lowercased() == "host" {
                host = TraceSummary.printable(pair[1].trimmingCharacters(in: " \t"))
                break
            }
        }
    }
}

private extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
