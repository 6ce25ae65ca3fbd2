/// Why the daemon cannot start; printed as one line before exiting non-zero.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable {
        public let rawValue: String
        public static let notPermitted = Code(rawValue: "not-permitted")
        public static let interfaceMissing = Code(rawValue: "interface-missing")
        public static let noDefaultRoute = Code(rawValue: "no-default-route")
        public static let socketInUse = Code(rawValue: "socket-in-use")
        public static let socket = Code(rawValue: "socket")
        public static let netlink = Code(rawValue: "netlink")
        public static let profiles = Code(rawValue: "profiles")
        public static let signals = Code(rawValue: "signals")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
