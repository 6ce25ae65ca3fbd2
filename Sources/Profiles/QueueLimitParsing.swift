import LinkCondVocabulary

extension QueueLimit {
    /// The most packets a queue may hold.
    public static let maximumPackets: UInt32 = 1_000_000
    /// One full-size Ethernet frame without FCS: the smallest queue in bytes, and the size bytes
    /// and times are counted in.
    public static let frameBytes: UInt64 = 1514
    /// 1 GB: beyond any link worth emulating, and far beyond the memory a queue should take.
    public static let maximumBytes: UInt64 = 1_000_000_000
    /// A queue given in time: 1 ms to 60 s.
    public static let millisecondRange: ClosedRange<UInt32> = 1...60_000

    private static let example = "100 packets, 64KB or 50ms"

    private static let timeUnits: [(suffix: String, factor: UInt64)] = [
        ("ms", 1), ("msec", 1), ("s", 1_000), ("sec", 1_000),
    ]

    /// Reads `100 packets`, `1 packet`, `64KB`, `1.5MB`, `256KiB`, `50ms` or `1.5s`.
    public init(parsing text: String) throws(UnitParseError) {
        let quantity = try QuantityText(text, kind: "queue size", example: Self.example)
        let number = quantity.number
        let unit = String(quantity.unit)
        guard !unit.isEmpty else {
            throw UnitParseError("'\(text)' has no unit; write a queue as packets, bytes or time, like \(Self.example)")
        }
        guard !number.isNegative, !number.isZero else {
            throw UnitParseError("a queue must hold more than nothing, got '\(text)' (leave queue out for linkcond's default)")
        }

        if unit.lowercased() == "packets" || unit.lowercased() == "packet" {
            guard !number.isFiner(thanFactor: 1) else {
                throw UnitParseError("'\(text)' is not a whole number of packets")
            }
            guard let count = number.scaled(by: 1, limit: UInt64(Self.maximumPackets)) else {
                throw UnitParseError("'\(text)' is more than the largest queue, \(Self.maximumPackets) packets")
            }
            self = .packets(UInt32(count))
            return
        }

        if let factor = ByteSize.factor(of: unit) {
            guard !number.isFiner(thanFactor: factor) else {
                throw UnitParseError("'\(text)' is not a whole number of bytes")
            }
            guard let bytes = number.scaled(by: factor, limit: Self.maximumBytes) else {
                throw UnitParseError("'\(text)' is more than the largest queue, 1 GB (1000MB)")
            }
            guard bytes >= Self.frameBytes else {
                throw UnitParseError("'\(text)' is less than one full-size frame, \(Self.frameBytes) B; such a queue could not hold a single packet")
            }
            self = .bytes(bytes)
            return
        }

        if let factor = Self.timeUnits.first(where: { $0.suffix == unit.lowercased() })?.factor {
            guard !number.isFiner(thanFactor: factor) else {
                throw UnitParseError("'\(text)' is not a whole number of milliseconds")
            }
            guard let milliseconds = number.scaled(by: factor, limit: UInt64(Self.millisecondRange.upperBound)) else {
                throw UnitParseError("'\(text)' is longer than the longest queue, 60s")
            }
            self = .milliseconds(UInt32(milliseconds))
            return
        }

        if ["us", "µs", "usec"].contains(unit.lowercased()) {
            throw UnitParseError("'\(text)' is finer than a queue is measured; write a queue's time in whole milliseconds, from 1ms to 60s")
        }
        if ByteSize.isMiscased(unit) {
            throw UnitParseError("unknown queue unit '\(unit)' in '\(text)'; write bytes with a capital B, like 64KB or 256KiB (a lower-case b would be bits)")
        }
        throw UnitParseError(
            "unknown queue unit '\(unit)' in '\(text)'; accepted: packets (100 packets), bytes (B, kB or KB, MB, KiB, MiB) or a time (ms, s)"
        )
    }
}
