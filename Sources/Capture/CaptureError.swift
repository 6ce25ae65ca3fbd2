/// Why a capture could not begin or went on no longer.
public struct CaptureError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case kernelRefused = "kernel-refused"
        case namespaceGone = "namespace-gone"
        case badRequest = "bad-request"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
