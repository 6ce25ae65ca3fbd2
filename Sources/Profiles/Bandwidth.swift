/// A link rate in bits per second.
///
/// Written as `32kbit`, `2Mbit`, `1Gbit`, `500bit` (decimal multiples, like `tc`). The
/// `bps` spellings (`kbps`, `Mbps`, `Gbps`) are accepted too and also mean *bits* per second,
/// as they do in Apple's Network Link Conditioner; `tc` would read them as bytes.
public struct Bandwidth: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var bitsPerSecond: UInt64

    public init(bitsPerSecond: UInt64) {
        self.bitsPerSecond = bitsPerSecond
    }

    public static func kbit(_ value: UInt64) -> Bandwidth { Bandwidth(bitsPerSecond: value * 1_000) }
    public static func mbit(_ value: UInt64) -> Bandwidth { Bandwidth(bitsPerSecond: value * 1_000_000) }
    public static func gbit(_ value: UInt64) -> Bandwidth { Bandwidth(bitsPerSecond: value * 1_000_000_000) }

    /// The largest rate linkcond configures: beyond it, shaping is pointless on any real NIC.
    public static let maximum = Bandwidth.gbit(100)

    public var bytesPerSecond: UInt64 { bitsPerSecond / 8 }

    public static func < (lhs: Bandwidth, rhs: Bandwidth) -> Bool {
        lhs.bitsPerSecond < rhs.bitsPerSecond
    }

    private static let multipliers: [(suffix: String, factor: UInt64)] = [
        ("bit", 1), ("bps", 1),
        ("kbit", 1_000), ("kbps", 1_000),
        ("mbit", 1_000_000), ("mbps", 1_000_000),
        ("gbit", 1_000_000_000), ("gbps", 1_000_000_000),
    ]

    /// Reads `32kbit`, `2Mbit`, `1.5Mbps`, `10 Gbit/s`.
    public init(parsing text: String) throws(UnitParseError) {
        let example = "32kbit, 2Mbit or 1Gbit"
        let quantity = try QuantityText(text, kind: "bandwidth", example: example)
        var unit = quantity.unit.lowercased()
        if unit.hasSuffix("/s") {
            unit = String(unit.dropLast(2))
        }
        guard !unit.isEmpty else {
            throw UnitParseError("'\(text)' has no unit; write it like \(example)")
        }
        guard let factor = Self.multipliers.first(where: { $0.suffix == unit })?.factor else {
            throw UnitParseError("unknown bandwidth unit '\(quantity.unit)' in '\(text)'; accepted units: bit, kbit, Mbit, Gbit, bps, kbps, Mbps, Gbps (all bits per second, optionally with /s)")
        }
        let number = quantity.number
        guard !number.isNegative, !number.isZero else {
            throw UnitParseError("bandwidth must be more than 0 (leave it out for an unlimited link), got '\(text)'")
        }
        guard let bits = number.scaled(by: factor, limit: Self.maximum.bitsPerSecond) else {
            throw UnitParseError("bandwidth '\(text)' is above the largest rate, \(Self.maximum)")
        }
        guard bits >= 8 else {
            throw UnitParseError("bandwidth '\(text)' is below the smallest rate, 8bit")
        }
        self.bitsPerSecond = bits
    }

    /// `32kbit`, `1.5Mbit`, `1.2345Mbit`: the largest unit that keeps a whole part, every
    /// decimal kept, so that the text reads back as the same rate.
    public var description: String {
        let units: [(name: String, factor: UInt64)] = [("Gbit", 1_000_000_000), ("Mbit", 1_000_000), ("kbit", 1_000)]
        for unit in units where bitsPerSecond >= unit.factor {
            return formatDecimal(bitsPerSecond, per: unit.factor) + unit.name
        }
        return "\(bitsPerSecond)bit"
    }
}

/// `value / factor` exactly, with no trailing zeros; `factor` is a power of ten.
func formatDecimal(_ value: UInt64, per factor: UInt64, decimals: Int? = nil) -> String {
    let whole = value / factor
    let remainder = value % factor
    guard remainder != 0 else { return "\(whole)" }
    let width = decimals ?? String(factor).count - 1
    var fraction = String(remainder)
    fraction = String(repeating: "0", count: max(0, width - fraction.count)) + fraction
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return "\(whole).\(fraction)"
}
