/// A lease's length: `90s`, `30m`, `2h`, `1.5h`, `500ms`. At most a week.
public struct LeaseDuration: Hashable, Sendable, CustomStringConvertible {
    public var milliseconds: Int64

    public static let maximum = LeaseDuration(milliseconds: 7 * 24 * 3_600_000)

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public var seconds: Double { Double(milliseconds) / 1000 }

    private static let units: [(suffix: String, milliseconds: Double)] = [
        ("ms", 1), ("s", 1000), ("sec", 1000), ("m", 60_000), ("min", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    public init(parsing text: String) throws(LeaseDurationError) {
        let trimmed = text.filter { $0 != " " }
        let numberEnd = trimmed.firstIndex { !($0.isNumber || $0 == ".") } ?? trimmed.endIndex
        guard let number = Double(trimmed[..<numberEnd]), number.isFinite else {
            throw LeaseDurationError(text: text, problem: "is not a duration; write it like 30s, 5m or 2h")
        }
        let unit = trimmed[numberEnd...].lowercased()
        guard let factor = Self.units.first(where: { $0.suffix == unit })?.milliseconds else {
            throw LeaseDurationError(text: text, problem: unit.isEmpty ? "has no unit; write it like 30s, 5m or 2h" : "has an unknown unit; use ms, s, m, h or d")
        }
        let milliseconds = (number * factor).rounded()
        guard milliseconds > 0 else {
            throw LeaseDurationError(text: text, problem: "must be longer than zero")
        }
        guard milliseconds <= Double(Self.maximum.milliseconds) else {
            throw LeaseDurationError(text: text, problem: "is longer than a week, the longest lease")
        }
        self.milliseconds = Int64(milliseconds)
    }

    /// An optional `for` field of a request: absent means no time limit.
    public static func parse(_ text: String?) throws(LeaseDurationError) -> LeaseDuration? {
        guard let text else { return nil }
        return try LeaseDuration(parsing: text)
    }

    /// `30s`, `5m`, `1h30m`, `500ms`.
    public var description: String {
        if milliseconds % 1000 != 0 { return "\(milliseconds)ms" }
        var seconds = milliseconds / 1000
        var parts: [String] = []
        for (suffix, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60)] where seconds >= size {
            parts.append("\(seconds / size)\(suffix)")
            seconds %= size
        }
        if seconds > 0 || parts.isEmpty { parts.append("\(seconds)s") }
        return parts.joined()
    }
}

public struct LeaseDurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "'\(text)' \(problem)" }
}
