/// A link whose capacity follows a recording: mahimahi's trace format, one line per 1500-byte
/// delivery opportunity, each a time in milliseconds, the trace looping after its last one.
///
/// `1` alone is a 12 Mbit/s link (one opportunity every millisecond); `1`, `1`, `2` is 18 Mbit/s
/// (three every two milliseconds). The last timestamp is the trace's period: an opportunity at
/// the period and one at 0 of the next loop fall on the same moment, which is how mahimahi
/// plays a trace, and how linkcond counts one (`windows(widthMilliseconds:)`).
///
/// A pure value: the timestamps as read, checked (`init(name:file:timestamps:)`), with what a
/// daemon needs of them computed once, so that copying and comparing profiles stays cheap.
public struct LinkTrace: Sendable, CustomStringConvertible {
    /// One delivery opportunity carries 1500 bytes, as in mahimahi.
    public static let opportunityBits: UInt64 = 12_000
    /// The most lines (delivery opportunities) a trace may have: the longest of mahimahi's
    /// recorded cellular traces has about 700 000; two million is 8 MB of timestamps in memory.
    public static let maximumLines = 2_000_000
    /// The largest trace file, in bytes: two million lines of up to 15 characters, with room to spare.
    public static let maximumBytes = 32_000_000
    /// The longest period, a day, like the longest scenario step: a trace that long is a
    /// mistake more often than a recording.
    public static let maximumPeriodMilliseconds = 86_400_000
    /// More opportunities in one millisecond would be faster than the largest rate linkcond
    /// configures, `Bandwidth.maximum`; below it, no window of a trace can exceed that rate.
    public static let maximumOpportunitiesPerMillisecond = Int(Bandwidth.maximum.bitsPerSecond / (opportunityBits * 1_000))
    /// The window `peakCapacity` and `summary` measure in: the interval the daemon is planned
    /// to step a trace's rate at. Shorter windows see higher peaks (a millisecond with five
    /// opportunities is 60 Mbit/s), longer ones smooth them.
    public static let standardWindowMilliseconds = 100

    /// The file's name without its extension: `Verizon-LTE-driving` for `Verizon-LTE-driving.down`.
    public let name: String
    /// Where the trace was read from, as the profile resolved it: for messages, and for a
    /// restarted daemon to read it again.
    public let file: String
    /// The delivery opportunities, in milliseconds from the trace's start, never decreasing;
    /// a millisecond with several opportunities repeats its timestamp.
    public let timestamps: [UInt32]
    /// A hash of `timestamps` that is the same in every process and on every machine (64-bit
    /// FNV-1a over each timestamp's four little-endian bytes): for a state file, so that a
    /// restarted daemon that reads the file again can tell whether it still holds the same trace.
    public let fingerprint: UInt64
    /// The average rate over a whole period.
    public let meanCapacity: Bandwidth
    /// The highest capacity of a `standardWindowMilliseconds` window: what a queue given in
    /// time would be sized at.
    public let peakCapacity: Bandwidth

    /// The time after which the trace starts again: its last timestamp, always more than 0.
    public var periodMilliseconds: Int { Int(timestamps[timestamps.count - 1]) }

    /// Delivery opportunities in one period.
    public var opportunityCount: Int { timestamps.count }

    /// `timestamps` already checked (by `TraceTimestamps`).
    init(name: String, file: String, checkedTimestamps timestamps: [UInt32]) {
        self.name = name
        self.file = file
        self.timestamps = timestamps
        fingerprint = Self.fingerprint(of: timestamps)
        let period = UInt64(timestamps[timestamps.count - 1])
        meanCapacity = Bandwidth(bitsPerSecond: Self.bitsPerSecond(opportunities: timestamps.count, milliseconds: period))
        peakCapacity = Self.peakCapacity(of: timestamps, widthMilliseconds: Self.standardWindowMilliseconds)
    }

    /// The rate of `opportunities` delivered in `milliseconds`, rounded to the nearest bit/s.
    static func bitsPerSecond(opportunities: Int, milliseconds: UInt64) -> UInt64 {
        // Bits over milliseconds, × 1000 for seconds: for 2 000 000 opportunities, the most a
        // trace has, 2.4 × 10¹³, far inside 64 bits.
        let scaledBits = UInt64(opportunities) * opportunityBits * 1_000
        return (scaledBits + milliseconds / 2) / milliseconds
    }

    static func fingerprint(of timestamps: [UInt32]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for timestamp in timestamps {
            for shift in stride(from: 0, to: 32, by: 8) {
                hash ^= UInt64((timestamp >> UInt32(shift)) & 0xff)
                hash &*= 0x0000_0100_0000_01b3
            }
        }
        return hash
    }

    /// `trace subway (mean 4.21Mbit, peak 12Mbit)`: rates to three significant digits, the
    /// peak over `standardWindowMilliseconds` windows.
    public var summary: String {
        "trace \(name) (mean \(meanCapacity.roundedToThreeDigits), peak \(peakCapacity.roundedToThreeDigits))"
    }

    public var description: String { summary }
}

/// Compares and hashes by the fingerprint before the timestamps: two profiles with the same
/// trace compare at once when they share its storage, and hashing never walks two million values.
extension LinkTrace: Hashable {
    public static func == (lhs: LinkTrace, rhs: LinkTrace) -> Bool {
        lhs.fingerprint == rhs.fingerprint && lhs.name == rhs.name && lhs.file == rhs.file && lhs.timestamps == rhs.timestamps
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fingerprint)
        hasher.combine(name)
        hasher.combine(file)
    }
}

extension Bandwidth {
    /// Rounded to three significant digits, for a summary: a trace's mean is rarely round, and
    /// `4.213457Mbit` says no more than `4.21Mbit`.
    public var roundedToThreeDigits: Bandwidth {
        var unit: UInt64 = 1
        while bitsPerSecond / unit >= 1_000 { unit *= 10 }
        return Bandwidth(bitsPerSecond: (bitsPerSecond + unit / 2) / unit * unit)
    }
}

extension [UInt32] {
    /// The index of the first element not below `value`, in a sorted array: a binary search.
    func lowerBound(of value: UInt32) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
