/// A problem in a profile file, located the way compilers and systemd do it: `file:line: field: message`.
public struct ProfileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable classification; the message may change, the code does not.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public var description: String { rawValue }

        public static let unreadable = Code(rawValue: "unreadable")
        public static let syntax = Code(rawValue: "syntax")
        public static let wrongType = Code(rawValue: "wrong-type")
        public static let unknownField = Code(rawValue: "unknown-field")
        public static let missingField = Code(rawValue: "missing-field")
        public static let badValue = Code(rawValue: "bad-value")
        public static let duplicateName = Code(rawValue: "duplicate-name")
    }

    public var code: Code
    public var file: String
    /// 1-based; 0 when the problem concerns the whole file.
    public var line: Int
    /// Dotted path of the field, e.g. `downlink.loss`; empty when the problem is not about one field.
    public var field: String
    public var message: String

    public init(code: Code, file: String, line: Int, field: String, message: String) {
        self.code = code
        self.file = file
        self.line = line
        self.field = field
        self.message = message
    }

    public var description: String {
        let location = line > 0 ? "\(file):\(line)" : file
        return field.isEmpty ? "\(location): \(message)" : "\(location): \(field): \(message)"
    }
}
