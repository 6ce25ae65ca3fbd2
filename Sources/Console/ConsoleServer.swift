import Glibc
import LinkCondVocabulary
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The console's listeners: HTTP for browsers on the address the operator names, and the token
/// socket, a Unix socket whose file mode is the check (root and the `linkcond` group), where
/// `linkcond console token` gets operators' tokens.
///
/// Every connection is bounded: a request's head and body (64 KiB), the time a request may take
/// to arrive (10 s, so a slow sender cannot hold a connection), the connections at once from one
/// address and from all.
public struct ConsoleServer: Sendable {
    public var limits = Limits()

    public struct Limits: Sendable {
        public var maximumBody = 64 << 10
        public var requestTimeout = TimeAmount.seconds(10)
        public var connections = 256
        public var connectionsPerAddress = 32

        public init() {}
    }

    let app: ConsoleApp
    let tokens: OperatorAccess

    public init(app: ConsoleApp, tokens: OperatorAccess) {
        self.app = app
        self.tokens = tokens
    }

    /// Listens for browsers on `host`:`port`; the channel, whose address says the port bound.
    public func listen(host: String, port: Int, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> Channel {
        let counter = ConnectionCounter(limits: limits)
        let limits = self.limits
        let app = self.app
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 128)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let peer = channel.remoteAddress?.ipAddress ?? "unknown"
                guard counter.admit(peer) else {
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in counter.release(peer) }
                return Self.configure(channel, limits: limits) { request in
                    var request = request
                    request.peer = peer
                    return await app.respond(to: request)
                }
            }
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port)
            .get()
    }

    /// The token socket at `path` (mode 0660, in a directory of mode 0750, both of group
    /// `groupName` when this process may give them to it): `POST /token?for=1h` answers a new token.
    public func listenForTokens(
        at path: String, groupName: String = "linkcond", group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> Channel {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let owner = getgrnam(groupName).map { $0.pointee.gr_gid }
        if !directory.isEmpty, mkdir(directory, 0o750) == 0, let owner {
            chown(directory, uid_t.max, owner)
        }
        unlink(path)
        let limits = self.limits
        let tokens = self.tokens
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                Self.configure(channel, limits: limits) { request in TokenEndpoint.respond(to: request, tokens: tokens) }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
            .get()
        chmod(path, 0o660)
        if let owner { chown(path, uid_t.max, owner) }
        return channel
    }

    static func configure(
        _ channel: Channel, limits: Limits, respond: @escaping @Sendable (ConsoleRequest) async -> ConsoleResponse
    ) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(NIOHTTPServerRequestAggregator(maxContentLength: limits.maximumBody))
            try sync.addHandler(ConsoleHandler(requestTimeout: limits.requestTimeout, respond: respond))
        }
    }
}

/// How many connections each address holds, refusing one beyond the limits.
final class ConnectionCounter: Sendable {
    private let counts = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))
    let limits: ConsoleServer.Limits

    init(limits: ConsoleServer.Limits) {
        self.limits = limits
    }

    func admit(_ address: String) -> Bool {
        counts.withLock { counts in
            guard counts.total < limits.connections, counts.byAddress[address, default: 0] < limits.connectionsPerAddress else { return false }
            counts.total += 1
            counts.byAddress[address, default: 0] += 1
            return true
        }
    }

    func release(_ address: String) {
        counts.withLock { counts in
            counts.total -= 1
            counts.byAddress[address, default: 1] -= 1
            if counts.byAddress[address] == 0 { counts.byAddress[address] = nil }
        }
    }
}

/// What the token socket answers.
public struct ConsoleToken: Codable, Sendable {
    public var token: String
    /// How long it lasts.
    public var seconds: Int
}

/// `POST /token?for=DURATION` on the token socket: a new operator token, for as long as a lease
/// may last (a week at most), read as a lease's duration is.
enum TokenEndpoint {
    static func respond(to request: ConsoleRequest, tokens: OperatorAccess) -> ConsoleResponse {
        guard request.method == .POST, request.path == "/token" else {
            return ConsoleError(.notFound, "the token socket answers POST /token?for=1h alone").response
        }
        guard let seconds = seconds(request.query["for"] ?? "1h") else {
            return ConsoleError(.badRequest, "for must be a duration from 1s to 7d: 30m, 1h, 7d").response
        }
        let token = tokens.issueToken(for: .seconds(seconds))
        return ConsoleApp.json(ConsoleToken(token: token, seconds: seconds))
    }

    /// `90s`, `30m`, `1h`, `7d` in whole seconds; nil for less than a second or more than a week.
    static func seconds(_ text: String) -> Int? {
        guard let duration = try? LeaseDuration(parsing: text), duration.milliseconds >= 1000 else { return nil }
        return Int(duration.milliseconds / 1000)
    }
}
