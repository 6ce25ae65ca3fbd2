/// A problem in a trace file, located as a profile's are: `file:line: message`, or
/// `file: message` when it concerns the whole file (it cannot be read, is empty or too large).
public struct TraceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// 1-based; 0 when the problem concerns the whole file.
    public var line: Int
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    public var description: String {
        line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}
