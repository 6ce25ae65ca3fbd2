/// Reading mahimahi's trace format, and checking timestamps however they come.
///
/// Each line is one whole number, the millisecond of a 1500-byte delivery opportunity, counted
/// from the trace's start; the numbers never decrease, and the last one is the period. Spaces
/// and tabs around a number and a carriage return before the newline (a file saved on Windows)
/// are allowed. Blank lines are refused, as mahimahi refuses them: a gap in a recording is
/// more likely a cut than meant, and a blank line cannot be told from a missing timestamp. The
/// newline after the last line is optional.
///
/// Reading is one pass over at most `maximumBytes`, keeping only the timestamps (4 bytes each,
/// at most `maximumLines`).
extension LinkTrace {
    /// Reads a trace from the text of a file; `name` and `file` are for the value and the
    /// errors (`file:line: message`).
    public init(parsing text: String, name: String, file: String) throws(TraceError) {
        var text = text
        let parsed = text.withUTF8 { bytes in
            Result { () throws(TraceError) in try Self.timestamps(in: bytes, file: file) }
        }
        self.init(name: name, file: file, checkedTimestamps: try parsed.get())
    }

    /// A trace of `timestamps`, checked as a file's lines would be (line `n` is
    /// `timestamps[n − 1]`): for traces made by code rather than read.
    public init(name: String, file: String, timestamps: [UInt32]) throws(TraceError) {
        var collected = TraceTimestamps(file: file)
        for (offset, timestamp) in timestamps.enumerated() {
            try collected.append(Int(timestamp), line: offset + 1)
        }
        self.init(name: name, file: file, checkedTimestamps: try collected.finish())
    }

    /// The checked timestamps of a trace file's bytes.
    static func timestamps(in bytes: UnsafeBufferPointer<UInt8>, file: String) throws(TraceError) -> [UInt32] {
        guard bytes.count <= maximumBytes else {
            throw TraceError(file: file, line: 0, message: tooLarge(bytes: bytes.count))
        }
        var collected = TraceTimestamps(file: file)
        var lineStart = 0
        var line = 0
        while lineStart < bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count, bytes[lineEnd] != UInt8(ascii: "\n") {
                lineEnd += 1
            }
            line += 1
            try collected.append(try milliseconds(in: bytes[lineStart..<lineEnd], line: line, file: file), line: line)
            lineStart = lineEnd + 1
        }
        return try collected.finish()
    }

    static let longestTrace = "a day (\(maximumPeriodMilliseconds) ms)"

    static func tooLarge(bytes: Int) -> String {
        "is \(bytes) bytes; a trace file is at most \(maximumBytes) bytes (32 MB, \(maximumLines) lines of a timestamp each)"
    }

    /// The whole number on one line, without its newline.
    private static func milliseconds(in line: Slice<UnsafeBufferPointer<UInt8>>, line number: Int, file: String) throws(TraceError) -> Int {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var first = line.startIndex
        var end = line.endIndex
        if end > first, line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        while first < end, isBlank(line[first]) { first += 1 }
        while end > first, isBlank(line[end - 1]) { end -= 1 }
        guard first < end else {
            throw TraceError(file: file, line: number, message: "blank line; a trace holds one timestamp on every line (mahimahi refuses blank lines too)")
        }
        let text = line[first..<end]
        let isNegative = text.first == UInt8(ascii: "-")
        let digits = isNegative ? text.dropFirst() : text
        guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw TraceError(
                file: file, line: number,
                message: "\(quoted(text)) is not a whole number; each line is the millisecond of one 1500-byte delivery opportunity, like 12"
            )
        }
        guard !isNegative else {
            throw TraceError(file: file, line: number, message: "\(quoted(text)) is negative; a timestamp counts milliseconds from the trace's start")
        }
        var value = 0
        for digit in digits {
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
            // Checked digit by digit, so that no number of digits can overflow.
            guard value <= maximumPeriodMilliseconds else {
                throw TraceError(file: file, line: number, message: "\(quoted(text)) is beyond the longest trace, \(longestTrace)")
            }
        }
        return value
    }

    /// `'abc'`, shortened to 20 characters: a line of a binary file could be megabytes long.
    private static func quoted(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        let text = String(decoding: bytes.prefix(80), as: UTF8.self)
        return text.count > 20 ? "'\(text.prefix(20))…'" : "'\(text)'"
    }
}
