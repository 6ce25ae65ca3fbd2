import Conditions
import NIOCore

/// How much of the daemon one control connection, and one local user, may hold. Any local
/// user may connect to the socket, so each of these bounds what a hostile one can take.
public struct ControlLimits: Sendable {
    /// Request bodies larger than this are refused (413): the API's bodies are a few hundred bytes.
    public var maximumBodyBytes = 64 * 1024
    /// One header line, and all of a request's headers together.
    public var maximumHeaderFieldBytes = 8 * 1024
    public var maximumHeaderBytes = 16 * 1024
    public var maximumHeaderFields = 64
    /// A connection that sends nothing for this long, after connecting or after its last
    /// answer, is closed.
    public var idleTimeout = TimeAmount.seconds(30)
    /// From the first byte of a request to its end, including the body: a slower request is
    /// answered with 408 and the connection closed.
    public var requestTimeout = TimeAmount.seconds(10)
    /// An answer the client does not read within this long closes the connection.
    public var responseTimeout = TimeAmount.seconds(10)
    /// Open connections of one user other than root; leases (`linkcond run`) count. Room for
    /// a CI runner's parallel jobs, each polling the daemon.
    public var connectionsPerUser = 64
    /// Open connections of all users other than root together.
    public var connectionsOfOthers = 512
    /// Open connections of root, which no other user's connections can take away.
    public var connectionsOfRoot = 128

    public init() {}

    public static let standard = ControlLimits()
}
