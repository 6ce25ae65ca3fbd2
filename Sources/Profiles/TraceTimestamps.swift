/// Collects a trace's timestamps one line at a time, checking each as it comes, so that the
/// first problem by line is the one reported and a file is read once: parsing a file and
/// building a trace from an array share these rules.
struct TraceTimestamps {
    let file: String
    /// `LinkTrace.maximumLines`, unless a test needs fewer.
    let maximumLines: Int
    private(set) var timestamps: [UInt32] = []
    /// Opportunities so far at the last timestamp.
    private var atLast = 0

    init(file: String, maximumLines: Int = LinkTrace.maximumLines) {
        self.file = file
        self.maximumLines = maximumLines
    }

    /// Adds the timestamp of `line` (not negative): at most a day, never below the one before,
    /// at most `maximumOpportunitiesPerMillisecond` alike, at most `maximumLines` in all.
    mutating func append(_ milliseconds: Int, line: Int) throws(TraceError) {
        guard milliseconds <= LinkTrace.maximumPeriodMilliseconds else {
            throw TraceError(
                file: file, line: line,
                message: "\(milliseconds) is beyond the longest trace, \(LinkTrace.longestTrace)"
            )
        }
        let timestamp = UInt32(milliseconds)
        guard timestamps.count < maximumLines else {
            throw TraceError(
                file: file, line: line,
                message: "more than \(maximumLines) lines; a trace holds at most \(maximumLines) delivery opportunities"
            )
        }
        if let last = timestamps.last {
            guard timestamp >= last else {
                throw TraceError(
                    file: file, line: line,
                    message: "\(timestamp) is before \(last) on the line above; timestamps never decrease (several opportunities in one millisecond repeat its timestamp)"
                )
            }
            atLast = timestamp == last ? atLast + 1 : 1
        } else {
            atLast = 1
        }
        guard atLast <= LinkTrace.maximumOpportunitiesPerMillisecond else {
            throw tooMany(at: timestamp, line: line)
        }
        timestamps.append(timestamp)
    }

    /// The timestamps, once the last line is in: at least one, the last (the period) above 0,
    /// and not too many at 0 once the loop adds those at the period to them.
    func finish() throws(TraceError) -> [UInt32] {
        guard let period = timestamps.last else {
            throw TraceError(file: file, line: 0, message: "is empty; a trace holds one timestamp in milliseconds per line, one line per 1500-byte delivery opportunity")
        }
        guard period > 0 else {
            throw TraceError(
                file: file, line: timestamps.count,
                message: "the trace ends at 0 ms; its last timestamp is its period, after which it starts again, and must be more than 0"
            )
        }
        let atZero = timestamps.lowerBound(of: 1)
        if atZero > 0, atZero + atLast > LinkTrace.maximumOpportunitiesPerMillisecond {
            throw tooMany(at: period, line: timestamps.count, joining: atZero)
        }
        return timestamps
    }

    private func tooMany(at timestamp: UInt32, line: Int, joining atZero: Int = 0) -> TraceError {
        let limit = LinkTrace.maximumOpportunitiesPerMillisecond
        let joined = atZero > 0 ? ", with the \(atZero) at 0 ms that the loop plays at the same moment" : ""
        return TraceError(
            file: file, line: line,
            message: "more than \(limit) delivery opportunities at \(timestamp) ms\(joined); that is faster than the largest rate, \(Bandwidth.maximum)"
        )
    }
}
