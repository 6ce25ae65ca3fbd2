/// The share of packets dropped, from 0% to 100%.
///
/// Written as `90%` or `0.5%`; the `%` is required so that `0.9` is never misread. Kept exactly
/// as written, to ten decimals of a percent (finer than the kernel's own resolution of
/// 1/2³² ≈ 0.00000002%), so that a value survives files, the API and the state file unchanged.
public struct LossRate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Percent × 10¹⁰: 100% is 10¹², 0.0004% is 4 000 000.
    public var scaledPercent: UInt64

    /// The scale of `scaledPercent`.
    public static let scale: UInt64 = 10_000_000_000
    static let decimals = 10

    public init(scaledPercent: UInt64) {
        precondition(scaledPercent <= 100 * Self.scale, "loss is a percentage")
        self.scaledPercent = scaledPercent
    }

    /// Rounded to the nearest representable value; for code and tests, not for input.
    public init(percent: Double) {
        precondition((0...100).contains(percent), "loss is a percentage")
        self.init(scaledPercent: UInt64((percent * Double(Self.scale)).rounded()))
    }

    public static let none = LossRate(scaledPercent: 0)
    public static let total = LossRate(scaledPercent: 100 * scale)

    public var isZero: Bool { scaledPercent == 0 }
    public var percent: Double { Double(scaledPercent) / Double(Self.scale) }
    public var fraction: Double { percent / 100 }

    public static func < (lhs: LossRate, rhs: LossRate) -> Bool {
        lhs.scaledPercent < rhs.scaledPercent
    }

    public init(parsing text: String) throws(UnitParseError) {
        let quantity = try QuantityText(text, kind: "loss", example: "10% or 0.5%")
        guard quantity.unit == "%" else {
            if quantity.unit.isEmpty {
                throw UnitParseError("'\(text)' has no unit; write loss as a percentage, like \(text.trimmingSpaces())%")
            }
            throw UnitParseError("unknown loss unit '\(quantity.unit)' in '\(text)'; write loss as a percentage, like 10% (the only accepted unit is %)")
        }
        let number = quantity.number
        guard !number.isNegative || number.isZero, let scaled = number.scaled(by: Self.scale, limit: 100 * Self.scale) else {
            throw UnitParseError("loss '\(text)' is out of range; it must be between 0% and 100%")
        }
        guard !number.isFiner(thanFactor: Self.scale) else {
            throw UnitParseError("loss '\(text)' has more than \(Self.decimals) decimals")
        }
        self.scaledPercent = scaled
    }

    /// `90%`, `0.5%`, `0.0004%`: every decimal kept, none trailing.
    public var description: String {
        formatDecimal(scaledPercent, per: Self.scale, decimals: Self.decimals) + "%"
    }
}
