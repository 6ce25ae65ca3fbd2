/// The share of packets dropped, from 0% to 100%.
///
/// Written as `90%` or `0.5%`; the `%` is required so that `0.9` is never misread.
public struct LossRate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Percent, 0...100.
    public var percent: Double

    public init(percent: Double) {
        precondition((0...100).contains(percent), "loss is a percentage")
        self.percent = percent
    }

    public static let none = LossRate(percent: 0)
    public static let total = LossRate(percent: 100)

    public var isZero: Bool { percent == 0 }
    public var fraction: Double { percent / 100 }

    public static func < (lhs: LossRate, rhs: LossRate) -> Bool {
        lhs.percent < rhs.percent
    }

    public init(parsing text: String) throws(UnitParseError) {
        let quantity = try QuantityText(text, kind: "loss", example: "10% or 0.5%")
        guard quantity.unit == "%" else {
            if quantity.unit.isEmpty {
                throw UnitParseError("'\(text)' has no unit; write loss as a percentage, like \(text)%")
            }
            throw UnitParseError("unknown loss unit '\(quantity.unit)' in '\(text)'; write loss as a percentage, like 10%")
        }
        guard (0...100).contains(quantity.number) else {
            throw UnitParseError("loss '\(text)' is out of range; it must be between 0% and 100%")
        }
        self.percent = quantity.number
    }

    /// `90%`, `0.5%`.
    public var description: String {
        let scaled = UInt64((percent * 1000).rounded())
        return formatDecimal(scaled, per: 1000) + "%"
    }
}
