
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

/// Splits `"32kbit"` into the number `32` and the unit `"kbit"`.
struct QuantityText {
    var number: Double
    var unit: Substring

    init(_ text: String, kind: String, example: String) throws(UnitParseError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else {
            throw UnitParseError("empty \(kind); write it like \(example)")
        }
        let numberEnd = trimmed.firstIndex { !($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") } ?? trimmed.endIndex
        let numberText = trimmed[..<numberEnd]
        guard let number = Double(numberText), number.isFinite else {
            throw UnitParseError("'\(text)' is not a \(kind); write it like \(example)")
        }
        self.number = number
        self.unit = trimmed[numberEnd...].drop { $0 == " " }
    }
}
