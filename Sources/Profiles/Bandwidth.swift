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

    private static let multipliers: [(suffix: String, factor: Double)] = [
        ("bit", 1), ("bps", 1),
        ("kbit", 1e3), ("kbps", 1e3),
        ("mbit", 1e6), ("mbps", 1e6),
        ("gbit", 1e9), ("gbps", 1e9),
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
            throw UnitParseError("unknown bandwidth unit '\(quantity.unit)' in '\(text)'; use bit, kbit, Mbit or Gbit")
        }
        let bits = quantity.number * factor
        guard bits > 0 else {
            throw UnitParseError("bandwidth must be more than 0 (leave it out for an unlimited link), got '\(text)'")
        }
        guard bits >= 8 else {
            throw UnitParseError("bandwidth '\(text)' is below the smallest rate, 8bit")
        }
        guard bits <= Double(Self.maximum.bitsPerSecond) else {
            throw UnitParseError("bandwidth '\(text)' is above the largest rate, \(Self.maximum)")
        }
        self.bitsPerSecond = UInt64(bits.rounded())
    }

    /// `32kbit`, `1.5Mbit`, `250Mbit`: the largest unit that keeps the number short.
    public var description: String {
        let units: [(name: String, factor: UInt64)] = [("Gbit", 1_000_000_000), ("Mbit", 1_000_000), ("kbit", 1_000)]
        for (index, unit) in units.enumerated() where bitsPerSecond >= unit.factor {
            // Rounded to thousandths, 999.9999 Mbit would read "1000Mbit": say 1Gbit instead.
            let thousandths = (bitsPerSecond * 1000 + unit.factor / 2) / unit.factor
            if thousandths >= 1_000_000, index > 0 {
                return formatDecimal(bitsPerSecond, per: units[index - 1].factor) + units[index - 1].name
            }
            return formatDecimal(bitsPerSecond, per: unit.factor) + unit.name
        }
        return "\(bitsPerSecond)bit"
    }
}

/// `value / factor` with at most three decimals and no trailing zeros.
func formatDecimal(_ value: UInt64, per factor: UInt64) -> String {
    let whole = value / factor
    let remainder = value % factor
    guard remainder != 0 else { return "\(whole)" }
    let thousandths = (remainder * 1000 + factor / 2) / factor
    if thousandths >= 1000 { return "\(whole + 1)" }
    var fraction = String(thousandths)
    fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return fraction.isEmpty ? "\(whole)" : "\(whole).\(fraction)"
}
