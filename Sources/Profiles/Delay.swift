/// A non-negative time span with microsecond resolution: a delay, a jitter or a DNS delay.
///
/// Written as `100ms`, `1.5s`, `250us`; `0` may stand without a unit.
public struct Delay: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var microseconds: UInt64

    public init(microseconds: UInt64) {
        self.microseconds = microseconds
    }

    public static func milliseconds(_ value: UInt64) -> Delay { Delay(microseconds: value * 1_000) }
    public static func seconds(_ value: UInt64) -> Delay { Delay(microseconds: value * 1_000_000) }
    public static let zero = Delay(microseconds: 0)

    /// netem keeps delays as 32-bit psched ticks; a minute is far inside that and beyond any
    /// network worth emulating.
    public static let maximum = Delay.seconds(60)

    public var isZero: Bool { microseconds == 0 }
    public var seconds: Double { Double(microseconds) / 1e6 }

    public static func < (lhs: Delay, rhs: Delay) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    public static func + (lhs: Delay, rhs: Delay) -> Delay {
        Delay(microseconds: lhs.microseconds + rhs.microseconds)
    }

    private static let multipliers: [(suffix: String, factor: UInt64)] = [
        ("us", 1), ("µs", 1), ("usec", 1),
        ("ms", 1_000), ("msec", 1_000),
        ("s", 1_000_000), ("sec", 1_000_000),
    ]

    /// Reads `100ms`, `1.5s`, `250us` or a bare `0`.
    public init(parsing text: String) throws(UnitParseError) {
        let example = "100ms, 1.5s or 250us"
        let quantity = try QuantityText(text, kind: "duration", example: example)
        let number = quantity.number
        guard !number.isNegative || number.isZero else {
            throw UnitParseError("'\(text)' is negative; a delay can only be 0 or more")
        }
        let unit = quantity.unit.lowercased()
        if unit.isEmpty {
            guard number.isZero else {
                throw UnitParseError("'\(text)' has no unit; write it like \(example)")
            }
            self = .zero
            return
        }
        guard let factor = Self.multipliers.first(where: { $0.suffix == unit })?.factor else {
            throw UnitParseError("unknown time unit '\(quantity.unit)' in '\(text)'; accepted units: us (or µs, usec), ms (or msec), s (or sec)")
        }
        guard let microseconds = number.scaled(by: factor, limit: Self.maximum.microseconds) else {
            throw UnitParseError("'\(text)' is longer than the longest delay, \(Self.maximum)")
        }
        self.microseconds = microseconds
    }

    /// `100ms`, `1.5s`, `250us`, `0ms`.
    public var description: String {
        if microseconds == 0 { return "0ms" }
        if microseconds >= 1_000_000 && microseconds % 100_000 == 0 {
            return formatDecimal(microseconds, per: 1_000_000) + "s"
        }
        if microseconds >= 1_000 {
            return formatDecimal(microseconds, per: 1_000) + "ms"
        }
        return "\(microseconds)us"
    }
}
