/// An amount of bytes as people write it: `300B`, `64KB`, `1.5MB`, `2GB`, `256KiB`. Decimal
/// units are powers of 1000 (`kB` or `KB`), binary ones powers of 1024 (`KiB`); the unit is
/// case-sensitive, as a lower-case `b` would be bits. Every byte amount linkcond reads (a
/// queue, a scenario's trigger, a capture's file size) uses these units.
public struct ByteSize: Hashable, Sendable, CustomStringConvertible {
    public var bytes: UInt64

    public init(bytes: UInt64) {
        self.bytes = bytes
    }

    /// Every byte unit and its factor, written exactly so.
    public static let units: [(suffix: String, factor: UInt64)] = [
        ("B", 1), ("bytes", 1), ("byte", 1),
        ("kB", 1_000), ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000),
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
    ]

    /// The factor of `unit`, or nil when it is not a byte unit.
    public static func factor(of unit: some StringProtocol) -> UInt64? {
        units.first { $0.suffix == unit }?.factor
    }

    /// Whether `unit` is a byte unit written in the wrong case (`mb`, `Kb`): bits, or a slip.
    public static func isMiscased(_ unit: some StringProtocol) -> Bool {
        factor(of: unit) == nil && units.contains { $0.suffix.lowercased() == unit.lowercased() }
    }

    /// Reads `100MB`, `1.5 GB`, `512KiB` or `4096B` (whole bytes, `range` inclusive).
    public init(parsing text: String, range: ClosedRange<UInt64>) throws(ByteSizeError) {
        let trimmed = text.filter { $0 != " " }
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        let digits = trimmed[..<numberEnd]
        guard !digits.isEmpty, digits.filter({ $0 == "." }).count <= 1, digits != ".", digits.count <= 24 else {
            throw ByteSizeError(text: text, problem: "is not an amount of bytes; write it like 100MB, 1.5GB or 512KiB")
        }
        let unit = trimmed[numberEnd...]
        guard let factor = Self.factor(of: unit) else {
            if unit.isEmpty { throw ByteSizeError(text: text, problem: "has no unit; write it like 100MB, 1.5GB or 512KiB") }
            if Self.isMiscased(unit) {
                throw ByteSizeError(text: text, problem: "has the unit '\(unit)'; bytes are written with a capital B (KB, MB, GB, KiB, MiB, GiB): a lower-case b would be bits")
            }
            throw ByteSizeError(text: text, problem: "has an unknown unit '\(unit)'; use B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024)")
        }
        // Whole and fraction digits apart, so that 1.5MB is exactly 1 500 000 bytes.
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        let whole = UInt64(parts[0].isEmpty ? "0" : parts[0])
        let fraction = parts.count > 1 ? parts[1] : ""
        guard let whole, fraction.count <= 18 else {
            throw ByteSizeError(text: text, problem: "is larger than linkcond counts")
        }
        var scale: UInt64 = 1
        for _ in fraction { scale *= 10 }
        let fractionValue = UInt64(fraction.isEmpty ? "0" : fraction) ?? 0
        let (wholeBytes, overflow) = whole.multipliedReportingOverflow(by: factor)
        let (fractionProduct, fractionOverflow) = fractionValue.multipliedReportingOverflow(by: factor)
        guard !overflow, !fractionOverflow else {
            throw ByteSizeError(text: text, problem: "is larger than linkcond counts")
        }
        guard fractionProduct % scale == 0 else {
            throw ByteSizeError(text: text, problem: "is not a whole number of bytes")
        }
        let (bytes, sumOverflow) = wholeBytes.addingReportingOverflow(fractionProduct / scale)
        guard !sumOverflow, range.contains(bytes) else {
            throw ByteSizeError(
                text: text,
                problem: "is outside \(ByteSize(bytes: range.lowerBound)) to \(ByteSize(bytes: range.upperBound))"
            )
        }
        self.bytes = bytes
    }

    /// The largest decimal unit that keeps the amount readable: `100MB`, `1.5GB`, `4096B`.
    public var description: String {
        for (suffix, size) in [("GB", UInt64(1_000_000_000)), ("MB", 1_000_000), ("KB", 1_000)] where bytes >= size {
            if bytes % size == 0 { return "\(bytes / size)\(suffix)" }
            if bytes <= UInt64.max / 10, (bytes * 10) % size == 0 { return "\(bytes * 10 / size / 10).\(bytes * 10 / size % 10)\(suffix)" }
        }
        return "\(bytes)B"
    }
}

public struct ByteSizeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "'\(text)' \(problem)" }
}
