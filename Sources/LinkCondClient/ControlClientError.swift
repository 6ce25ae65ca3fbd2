import ControlAPI

/// Why a request to the daemon failed, in words a user can act on.
public struct ControlClientError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable {
        public let rawValue: String
        /// Nothing listens on the socket.
        public static let daemonNotRunning = Code(rawValue: "daemon-not-running")
        /// The socket exists but this user may not connect.
        public static let permissionDenied = Code(rawValue: "permission-denied")
        /// The daemon's listen backlog stayed full: it is not accepting connections fast enough.
        public static let daemonBusy = Code(rawValue: "daemon-busy")
        /// The daemon answered with an error document; `apiError` holds it.
        public static let api = Code(rawValue: "api")
        /// The daemon's answer made no sense.
        public static let badResponse = Code(rawValue: "bad-response")
        /// The daemon took the connection but did not answer within the client's `replyTimeout`.
        public static let noAnswer = Code(rawValue: "no-answer")
    }

    public var code: Code
    public var message: String
    /// The HTTP status, for `.api`.
    public var status: Int?
    /// The daemon's error document, for `.api`.
    public var apiError: ErrorResponse.Body?

    public init(code: Code, message: String, status: Int? = nil, apiError: ErrorResponse.Body? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.apiError = apiError
    }

    public var description: String { message }
}
