/// Why a value in human units could not be read, without knowing where it came from.
///
/// `ProfileParser` adds the file, line and field.
public struct UnitParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// Splits `"32kbit"` into the exact decimal `32` and the unit `"kbit"`.
struct QuantityText {
    var number: DecimalText
    var unit: Substring

    init(_ text: String, kind: String, example: String) throws(UnitParseError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else {
            throw UnitParseError("empty \(kind); write it like \(example)")
        }
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+")) } ?? trimmed.endIndex
        guard let number = DecimalText(trimmed[..<numberEnd]) else {
            throw UnitParseError("'\(text)' is not a \(kind); write it like \(example)")
        }
        self.number = number
        self.unit = trimmed[numberEnd...].drop { $0 == " " }
    }
}

/// A decimal number exactly as written (`1.2345`, `-3`, `.5`), so that values are scaled to
/// their base unit without passing through binary floating point.
struct DecimalText: Equatable {
    var isNegative: Bool
    /// The digits without the point: `1.2345` is 12345 with 4 fraction digits.
    var digits: UInt128
    var fractionDigits: Int

    /// More digits than this are refused: far beyond any meaningful precision, and it keeps
    /// every scaling below inside 128 bits.
    static let maximumDigits = 24

    init?(_ text: Substring) {
        var rest = text[...]
        isNegative = false
        if let sign = rest.first, sign == "-" || sign == "+" {
            isNegative = sign == "-"
            rest = rest.dropFirst()
        }
        var digits: UInt128 = 0
        var count = 0
        var fractionDigits = 0
        var seenPoint = false
        for character in rest {
            if character == "." {
                guard !seenPoint else { return nil }
                seenPoint = true
                continue
            }
            guard let value = character.wholeNumberValue, character.isASCII else { return nil }
            if count == 0 && value == 0 && !seenPoint { continue }
            count += 1
            guard count <= Self.maximumDigits else { return nil }
            digits = digits * 10 + UInt128(value)
            if seenPoint { fractionDigits += 1 }
        }
        guard rest.contains(where: { $0 != "." }) else { return nil }
        self.digits = digits
        self.fractionDigits = fractionDigits
    }

    var isZero: Bool { digits == 0 }

    /// `self × factor`, rounded half up to a whole number; `nil` when it exceeds `limit`.
    func scaled(by factor: UInt64, limit: UInt64) -> UInt64? {
        var divisor: UInt128 = 1
        for _ in 0..<fractionDigits { divisor *= 10 }
        let (product, overflow) = digits.multipliedReportingOverflow(by: UInt128(factor))
        guard !overflow else { return nil }
        let rounded = (product + divisor / 2) / divisor
        return rounded <= UInt128(limit) ? UInt64(rounded) : nil
    }

    /// Whether `self × factor` has a fractional part, i.e. is finer than the base unit.
    func isFiner(thanFactor factor: UInt64) -> Bool {
        var divisor: UInt128 = 1
        for _ in 0..<fractionDigits { divisor *= 10 }
        return (digits * UInt128(factor)) % divisor != 0
    }
}
