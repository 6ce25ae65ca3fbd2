import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// Talks to `linkcondd` over its Unix socket. Each call below makes one connection for one
/// request; `withConnection` keeps one open for many.
public struct ControlClient: Sendable {
    public var socketPath: String
    /// How long a request waits for the daemon's whole answer, and a lease for its first line,
    /// before giving up with `.noAnswer`. The daemon answers within its own limits (a host name
    /// lookup at most 10 s), so a longer wait is a daemon that is hung, or something else
    /// listening on its socket.
    public var replyTimeout: Duration = Self.defaultReplyTimeout

    /// `replyTimeout` unless set.
    public static let defaultReplyTimeout = Duration.seconds(30)
    /// The largest answer the client reads: far above the largest the daemon sends (1 024
    /// conditions with their kernel objects), and a bound on the memory a wrong answer costs.
    public static let maximumReplyBytes = 64 << 20

    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// The condition in force on the condition `condition` names (`eth0`, `netns/NAME/eth0`; the daemon's own when `nil`); `verbose` adds
    /// linkcond's kernel objects with their counters.
    public func status(verbose: Bool = false, condition: String? = nil) async throws(ControlClientError) -> StatusResponse {
        try await request(.GET, (condition.map(APIPath.condition) ?? APIPath.status) + (verbose ? "?verbose=1" : ""))
    }

    /// Every condition the daemon holds, its default one first.
    public func conditions(verbose: Bool = false) async throws(ControlClientError) -> ConditionListResponse {
        try await request(.GET, APIPath.conditions + (verbose ? "?verbose=1" : ""))
    }

    public func profiles() async throws(ControlClientError) -> ProfileListResponse {
        try await request(.GET, APIPath.profiles)
    }

    public func profile(named name: String) async throws(ControlClientError) -> ProfileDocument {
        try await request(.GET, APIPath.profile(name))
    }

    /// Saves a profile in the daemon's profile directory as a YAML file; `replace` lets it take
    /// the place of a saved profile of the same name. Built-in profiles are read-only.
    public func saveProfile(_ definition: ProfileDefinition, replace: Bool = false) async throws(ControlClientError) -> ProfileDocument {
        try await request(.POST, APIPath.profiles, body: SaveProfileRequest(definition: definition, replace: replace ? true : nil))
    }

    /// Deletes a saved profile, its file and all; what it was.
    public func deleteProfile(named name: String) async throws(ControlClientError) -> ProfileDocument {
        try await request(.DELETE, APIPath.profile(name))
    }

    /// Activates a profile by name, or one given as `definition`, on `interface` (the daemon's
    /// own when `nil`); with `duration` (e.g. `30s`) as a lease that reverts by itself.
    public func activate(
        _ name: String? = nil, definition: ProfileDefinition? = nil, replaceForeign: Bool = false, for duration: String? = nil,
        force: Bool = false, condition: String? = nil
    ) async throws(ControlClientError) -> StatusResponse {
        try await request(.PUT, condition.map(APIPath.condition) ?? APIPath.condition, body: ActivateRequest(
            profile: name, definition: definition, replaceForeign: replaceForeign ? true : nil, for: duration, force: force ? true : nil
        ))
    }

    public func deactivate(force: Bool = false, condition: String? = nil) async throws(ControlClientError) -> StatusResponse {
        try await request(.DELETE, (condition.map(APIPath.condition) ?? APIPath.condition) + (force ? "?force=1" : ""))
    }

    /// Switches every condition off.
    public func deactivateAll(force: Bool = false) async throws(ControlClientError) -> ConditionListResponse {
        try await request(.DELETE, APIPath.conditions + (force ? "?force=1" : ""))
    }

    /// Ends the caller's own lease early; the baseline comes back.
    public func releaseLease(condition: String? = nil) async throws(ControlClientError) -> StatusResponse {
        try await request(.DELETE, condition.map(APIPath.conditionLease) ?? APIPath.lease)
    }

    public func reload() async throws(ControlClientError) -> ReloadResponse {
        try await request(.POST, APIPath.reload)
    }

    /// Every active condition's counters, read from the kernel now; rates since the previous
    /// read by anyone, when that was at most a minute before.
    public func stats() async throws(ControlClientError) -> StatsResponse {
        try await request(.GET, APIPath.stats)
    }

    public func history(limit: Int) async throws(ControlClientError) -> HistoryResponse {
        try await request(.GET, APIPath.history + "?limit=\(limit)")
    }

    /// One request on a connection of its own.
    func request<Response: Decodable & Sendable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)? = Optional<ActivateRequest>.none
    ) async throws(ControlClientError) -> Response {
        do {
            return try await withConnection { connection in
                try await connection.request(method, path, body: body) as Response
            }
        } catch let error as ControlClientError {
            throw error
        } catch {
            throw connectionError(error)
        }
    }

    /// How long a connection waits while the daemon's listen backlog is full.
    static let backlogWait = Duration.seconds(5)

    /// A connection to the daemon. With `halfClosure`, the client can finish sending and still
    /// read: how a lease's client says it is done.
    ///
    /// A Unix socket whose backlog is full refuses a non-blocking connect with EAGAIN at once,
    /// however briefly it is full (other clients connecting faster than the daemon accepts:
    /// a busy CI runner, or a user flooding the socket). Waiting for room, as a blocking
    /// connect would, is what the caller wants; only a backlog full for `backlogWait` is an
    /// error. The wait is judged by when an attempt began, not when its refusal came back: on
    /// a loaded machine the event loop reported a refusal seconds late, and the backlog had
    /// room long before, so the last attempt is always one begun after the wait.
    func connect(halfClosure: Bool) async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let deadline = ContinuousClock.now + Self.backlogWait
        var pause = Duration.milliseconds(2)
        while true {
            let attempted = ContinuousClock.now
            do {
                return try await connectOnce(halfClosure: halfClosure)
            } catch where Self.errnoCode(of: error) == EAGAIN && attempted < deadline {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    private func connectOnce(halfClosure: Bool) async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: halfClosure)
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(AnswerCounter())
                    return try NIOAsyncChannel(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: halfClosure)
                    )
                }
            }
    }

    private static func errnoCode(of error: any Error) -> CInt? {
        (error as? IOError)?.errnoCode ?? ((error as? NIOConnectionError)?.connectionErrors.first?.error as? IOError)?.errnoCode
    }

    /// One whole request: head, JSON body if any, end.
    static func requestParts(_ method: HTTPMethod, _ path: String, payload: Data?, closing: Bool) -> [HTTPClientRequestPart] {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "linkcondd")
        if closing {
            headers.add(name: "Connection", value: "close")
        }
        var parts: [HTTPClientRequestPart] = []
        if let payload {
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(payload.count))
            parts = [.body(.byteBuffer(ByteBuffer(bytes: payload)))]
        }
        return [.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers))] + parts + [.end(nil)]
    }

    /// The daemon's error document as an error, if `body` is one.
    static func refusal(status: Int, body: Data) -> ControlClientError? {
        guard let document = try? JSONDecoder().decode(ErrorResponse.self, from: body) else { return nil }
        return ControlClientError(code: .api, message: document.error.message, status: status, apiError: document.error)
    }

    func connectionError(_ error: any Error) -> ControlClientError {
        if let error = error as? ControlClientError { return error }
        switch Self.errnoCode(of: error) {
        case ENOENT, ECONNREFUSED:
            return ControlClientError(
                code: .daemonNotRunning,
                message: "linkcondd is not running: nothing listens on \(socketPath) (start it with 'sudo systemctl start linkcondd', or name its socket with --socket or LINKCOND_SOCKET)"
            )
        case EACCES, EPERM:
            return ControlClientError(
                code: .permissionDenied,
                message: "not allowed to connect to \(socketPath); run linkcond with sudo"
            )
        case EAGAIN:
            return ControlClientError(
                code: .daemonBusy,
                message: "linkcondd at \(socketPath) took no new connection for \(Self.backlogWait): its backlog is full (too many clients connecting at once); retry later"
            )
        default:
            return ControlClientError(code: .daemonNotRunning, message: "cannot reach linkcondd at \(socketPath): \(error)")
        }
    }
}
