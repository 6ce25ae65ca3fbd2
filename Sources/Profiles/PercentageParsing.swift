extension LossRate {
    /// Reads a percentage exactly as `LossRate(parsing:)` does (`25%`, `0.5%`; 0% to 100%, up to
    /// ten decimals), with messages that name what it is: `duplication '120%' is out of range`
    /// rather than `loss '120%' …`. `quantity` is that name, e.g. `jitter correlation`.
    init(parsingPercentage text: String, of quantity: String) throws(UnitParseError) {
        let quantityText = try QuantityText(text, kind: "percentage", example: "25% or 0.5%")
        guard quantityText.unit == "%" else {
            if quantityText.unit.isEmpty {
                throw UnitParseError("'\(text)' has no unit; write \(quantity) as a percentage, like \(text.trimmingSpaces())%")
            }
            throw UnitParseError("unknown unit '\(quantityText.unit)' in '\(text)'; write \(quantity) as a percentage, like 25% (the only accepted unit is %)")
        }
        let number = quantityText.number
        guard !number.isNegative || number.isZero, number.scaled(by: Self.scale, limit: 100 * Self.scale) != nil else {
            throw UnitParseError("\(quantity) '\(text)' is out of range; it must be between 0% and 100%")
        }
        guard !number.isFiner(thanFactor: Self.scale) else {
            throw UnitParseError("\(quantity) '\(text)' has more than \(Self.decimals) decimals")
        }
        // The checks above are `LossRate(parsing:)`'s own, so this reads the same value and
        // never throws; it keeps one reading of percentages.
        self = try LossRate(parsing: text)
    }
}
