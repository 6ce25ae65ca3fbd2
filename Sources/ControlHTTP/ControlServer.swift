import Conditions
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// HTTP/1.1 over the daemon's Unix socket, one task per connection, each connection tagged
/// with its peer's credentials and held to `ControlLimits`.
package struct ControlServer: Sendable {
    let socket: SocketSource
    let router: ControlRouter
    let group: any EventLoopGroup
    let limits: ControlLimits
    let logger: Logger
    let limiter: ConnectionLimiter
    /// Connections that hold a lease, so that a stopping daemon can wait for their last word.
    package let leaseStreams = LeaseStreams()

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    package init(socket: SocketSource, router: ControlRouter, group: any EventLoopGroup, limits: ControlLimits = .standard, logger: Logger) {
        self.socket = socket
        self.router = router
        self.group = group
        self.limits = limits
        self.logger = logger
        self.limiter = ConnectionLimiter(limits: limits)
    }

    /// A connection on its way from the listening socket to the accept loop, with who is on the
    /// other side.
    ///
    /// Admitted connections are wrapped for async use in the channel initializer, before any
    /// read: NIO reads a half-closed socket's bytes as soon as it sees the end, whether reads
    /// are on or not, and bytes that reach a pipeline without its async handlers are lost
    /// (the request then waits for an answer that never comes). When the listening socket
    /// closes in the instant between accept and delivery, NIO drops the value unseen; its
    /// deinit then finishes the writer (which would otherwise trap) and closes the channel.
    package final class Accepted: Sendable {
        let channel: any Channel
        let peer: PeerCredentials
        /// `nil` when turned away at accept (too many connections): its refusal is on its way,
        /// and closes it once written.
        let connection: Connection?

        init(channel: any Channel, peer: PeerCredentials, connection: Connection?) {
            self.channel = channel
            self.peer = peer
            self.connection = connection
        }

        deinit {
            guard let connection else {
                // Turned away: the refusal closes it once written, and NIO writes it only once
                // the channel is registered, which is often after this value is dropped; closing
                // here lost the 503 to that race about half the time. One never registered (the
                // listening socket closed meanwhile) is closed a second later all the same.
                let channel = self.channel
                channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
                return
            }
            connection.outbound.finish()
            channel.close(promise: nil)
        }
    }

    /// How many accepted connections may wait for `serve` before the server stops accepting.
    /// NIO's default (10) let a user who keeps reconnecting fill the wait with connections
    /// about to be refused, so that root's waited behind hundreds of them in the backlog;
    /// refused ones are cheap to hold and admitted ones are capped by `ControlLimits`.
    static let acceptedWaiting = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(lowWatermark: 64, highWatermark: 256)

    /// Binds the socket, or adopts the one systemd passed (socket activation).
    package func bind() async throws -> NIOAsyncChannel<Accepted, Never> {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.autoRead, value: false)
        switch socket {
        case .inherited(let descriptor):
            return try await bootstrap.bind(descriptor, serverBackPressureStrategy: Self.acceptedWaiting, childChannelInitializer: initialize)
        case .tcp(let host, let port):
            // A restarted daemon binds again at once, even while closed scrapes linger in TIME_WAIT.
            return try await bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port, serverBackPressureStrategy: Self.acceptedWaiting, childChannelInitializer: initialize)
        case .path(let path):
            try SocketFile.prepare(path: path)
            let server = try await bootstrap.bind(
                unixDomainSocketPath: path,
                cleanupExistingSocketFile: true,
                serverBackPressureStrategy: Self.acceptedWaiting,
                childChannelInitializer: initialize
            )
            try SocketFile.openToEveryone(path: path)
            return server
        }
    }

    /// Admits or turns away a new connection. Never fails: a failed initializer would end the
    /// accept loop itself.
    @Sendable
    private func initialize(_ channel: any Channel) -> EventLoopFuture<Accepted> {
        if case .tcp = socket {
            guard let owner = scraperOwner(channel) else {
                channel.close(promise: nil)
                return channel.eventLoop.makeSucceededFuture(Accepted(channel: channel, peer: .scraper, connection: nil))
            }
            return channel.eventLoop.makeSucceededFuture(admit(channel, peer: .scraper, countedAs: owner))
        }
        let credentials: EventLoopFuture<PeerCredentials> = (channel as? SocketOptionProvider).map {
            $0.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SO_PEERCRED)
        } ?? channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        return credentials.flatMapErrorThrowing { _ in PeerCredentials.unknown }.map { peer in
            admit(channel, peer: peer, countedAs: peer.uid)
        }
    }

    /// Whose share of connections a metrics listener's connection takes: the user who owns the
    /// socket at its other end, so that one user's flood of idle connections fills that user's
    /// share alone and Prometheus's scrapes still get in. When the owner cannot be told, the
    /// share all such connections have together. Counted, never trusted: the peer stays a
    /// `.scraper`, served `/metrics` alone whoever it is.
    ///
    /// `nil` when the other end is already closed: nobody is there to read an answer. A flood
    /// that ends leaves the kernel handing over such connections for a while (SYN-cookie
    /// connections become real on the peer's FIN), which must neither take a share nor hold
    /// descriptors.
    private func scraperOwner(_ channel: any Channel) -> UInt32? {
        guard let peer = channel.remoteAddress, let local = channel.localAddress else { return PeerCredentials.scraper.uid }
        switch LoopbackPeer.owner(of: peer, connectedTo: local) {
        case .success(let uid):
            return uid
        case .failure(let failure) where failure.peerClosed:
            return nil
        case .failure(let failure):
            logger.debug("the user at the other end of \(peer) cannot be told (\(failure)): counted with the scrapers of unknown users")
            return PeerCredentials.scraper.uid
        }
    }

    /// Wraps an accepted connection for the accept loop, or answers 503 and closes it when the
    /// user it is `countedAs` has too many open.
    private func admit(_ channel: any Channel, peer: PeerCredentials, countedAs uid: UInt32) -> Accepted {
        if let refusal = peer == .unknown ? "the peer's credentials cannot be read" : limiter.admit(uid: uid) {
            let reply = ControlError(.tooManyConnections, "\(refusal); close some and retry").reply
            channel.writeAndFlush(ByteBuffer(bytes: ConnectionGuard.encode(reply))).whenComplete { _ in channel.close(promise: nil) }
            return Accepted(channel: channel, peer: peer, connection: nil)
        }
        let limiter = self.limiter
        channel.closeFuture.whenComplete { _ in limiter.release(uid: uid) }
        do {
            try addHTTPHandlers(to: channel)
            let connection = try Connection(wrappingChannelSynchronously: channel)
            try channel.syncOptions?.setOption(.autoRead, value: true)
            return Accepted(channel: channel, peer: peer, connection: connection)
        } catch {
            channel.close(promise: nil)
            return Accepted(channel: channel, peer: peer, connection: nil)
        }
    }

    private func addHTTPHandlers(to channel: any Channel) throws {
        try channel.pipeline.syncOperations.addHandlers(Self.httpHandlers(limits: limits))
    }

    /// What turns a control connection's bytes into requests, held to `limits`: the same for
    /// the server, its tests and the fuzzer.
    package static func httpHandlers(limits: ControlLimits) -> [any ChannelHandler] {
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderFieldSize = limits.maximumHeaderFieldBytes
        decoderLimits.maxHeaderListSize = limits.maximumHeaderBytes
        decoderLimits.maxHeaderFieldCount = limits.maximumHeaderFields
        return [
            ConnectionGuard.FrontEnd(),
            HTTPResponseEncoder(),
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: decoderLimits)),
            HTTPServerPipelineHandler(),
            ConnectionGuard(limits: limits),
        ]
    }

    /// Serves until the listening socket closes, then ends every connection still open.
    package func serve(_ server: NIOAsyncChannel<Accepted, Never>) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await accepted in connections where accepted.connection != nil {
                    group.addTask { await handle(accepted) }
                }
            }
            // The listening socket is closed: end the connections still open (idle keep-alive
            // clients, leases), each through its own executeThenClose.
            group.cancelAll()
        }
    }

    private func handle(_ accepted: Accepted) async {
        let requester = Requester.fromPeer(uid: accepted.peer.uid, gid: accepted.peer.gid, pid: accepted.peer.pid)
        do {
            guard let connection = accepted.connection else { return }
            try await connection.executeThenClose { inbound, outbound in
                var parts = inbound.makeAsyncIterator()
                while let request = try await nextRequest(from: &parts) {
                    let head = request.head
                    let route: Route = request.tooLarge
                        ? .reply(ControlError(.payloadTooLarge, "request bodies are limited to \(limits.maximumBodyBytes) bytes").reply)
                        : await router.route(ControlRequest(method: head.method, uri: head.uri, body: request.body, requester: requester))
                    switch route {
                    case .reply(let reply):
                        logger.debug("\(head.method) \(APICall.printable(head.uri)) -> \(reply.status.code) for \(requester)")
                        let closing = !head.isKeepAlive || request.tooLarge
                        try await outbound.write(contentsOf: ConnectionGuard.parts(of: reply, closing: closing))
                        AllocatorTrim.process.afterReply()
                        if closing { return }
                    case .hold(let session):
                        try await hold(session, head: head, channel: accepted.channel, parts: &parts, outbound: outbound)
                        return
                    case .capture(let capture):
                        try await stream(capture, head: head, channel: accepted.channel, outbound: outbound)
                        return
                    }
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
    }

    /// One whole request, or `nil` when the client closed the connection. A body beyond the
    /// limit is read and dropped, and the request marked too large.
    private func nextRequest(
        from parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator
    ) async throws -> (head: HTTPRequestHead, body: [UInt8], tooLarge: Bool)? {
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var tooLarge = false
        while let part = try await parts.next() {
            switch part {
            case .head(let requestHead):
                head = requestHead
            case .body(let buffer):
                if body.count + buffer.readableBytes > limits.maximumBodyBytes {
                    tooLarge = true
                    body = []
                } else if !tooLarge {
                    body.append(contentsOf: buffer.readableBytesView)
                }
            case .end:
                guard let head else { return nil }
                return (head, body, tooLarge)
            }
        }
        return nil
    }

    /// `POST /v1/leases`: answers with one JSON line when the lease is in force, keeps the
    /// response open while the client keeps the connection, and ends the lease when it closes.
    private func hold(
        _ session: LeaseSession, head: HTTPRequestHead, channel: any Channel,
        parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        leaseStreams.opened()
        defer { leaseStreams.closed() }
        let lastWord = LastWord()
        let held: LeaseSession.Held
        switch await session.begin(onEnd: { event in
            // Expiry, take-over or shutdown: tell the client and hang up; the read loop below
            // then finds the connection closed and has nothing left to release.
            lastWord.send {
                try? await outbound.write(contentsOf: [.body(.byteBuffer(Self.line(event))), .end(nil)])
                try? await channel.close()
            }
        }) {
        case .held(let lease):
            held = lease
        case .refused(let reply):
            try await outbound.write(contentsOf: ConnectionGuard.parts(of: reply, closing: true))
            return
        }
        try await channel.eventLoop.submit {
            channel.pipeline.fireUserInboundEventTriggered(ConnectionGuard.LeaseHeld())
        }.get()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        try await outbound.write(contentsOf: [
            .head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)),
            .body(.byteBuffer(Self.line(held.first))),
        ])
        // Anything more the client sends is ignored; its end (or failure) ends the lease.
        while (try? await parts.next()) != nil {}
        guard let last = await session.release(held) else {
            // The lease ended otherwise while the client let go (a daemon stopping as a command
            // ends): its last line is being written, and returning now would close the
            // connection under it.
            await lastWord.written()
            return
        }
        try? await outbound.write(contentsOf: [.body(.byteBuffer(Self.line(last))), .end(nil)])
    }

    /// `GET /v1/conditions/{id}/capture`: a pcapng stream until the capture's limit or the
    /// client's end; the client's own bytes are not read meanwhile (a capture takes no input).
    private func stream(
        _ capture: CaptureStream, head: HTTPRequestHead, channel: any Channel,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        let running: CaptureStream.Running
        switch await capture.begin() {
        case .running(let began):
            running = began
        case .refused(let reply):
            try await outbound.write(contentsOf: ConnectionGuard.parts(of: reply, closing: true))
            return
        }
        let inputEnd = InputEndWatcher()
        try await channel.eventLoop.submit {
            channel.pipeline.fireUserInboundEventTriggered(ConnectionGuard.LeaseHeld())
            try channel.pipeline.syncOperations.addHandler(inputEnd, position: .first)
        }.get()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: CaptureStream.contentType)
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Connection", value: "close")
        logger.debug("\(head.method) \(APICall.printable(head.uri)) -> 200, capture \(running.grant.serial) streams")
        do {
            try await outbound.write(contentsOf: [
                .head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)),
                .body(.byteBuffer(capture.header(of: running))),
            ])
        } catch {
            await capture.end(running, detail: "the client closed the stream before it began")
            throw error
        }
        let loop = channel.eventLoop
        await capture.stream(running, clientEnded: { inputEnd.hasEnded }, write: { bytes in
            guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
            try await outbound.write(.body(.byteBuffer(bytes)))
        }, sleep: { duration in
            guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
            try await loop.sleep(for: duration)
        })
        try? await outbound.write(.end(nil))
    }

    private static func line(_ event: LeaseEvent) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = (try? encoder.encode(event)) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }
}

/// The line that tells a lease's client why the lease ended, written by a task of its own (the
/// conditioner calls `onEnd` synchronously, on its actor), which the connection waits for
/// before it closes.
package final class LastWord: Sendable {
    private let writing = Mutex<Task<Void, Never>?>(nil)

    func send(_ write: @escaping @Sendable () async -> Void) {
        writing.withLock { $0 = Task { await write() } }
    }

    func written() async {
        await writing.withLock { $0 }?.value
    }
}

/// `struct ucred` as `SO_PEERCRED` fills it; Glibc hides the C type behind `_GNU_SOURCE`.
package struct PeerCredentials: Sendable, Equatable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0

    static let unknown = PeerCredentials(pid: -1, uid: .max, gid: .max)
    /// A TCP peer, which has no credentials: a metrics scraper, served `/metrics` alone. Its
    /// connection counts against the user who owns its socket (`LoopbackPeer`); those whose
    /// owner cannot be told share this uid's limit.
    static let scraper = PeerCredentials(pid: 0, uid: .max - 1, gid: .max - 1)
}

/// Where the control socket comes from.
public enum SocketSource: Sendable, Equatable {
    /// Bound by the daemon at this path.
    case path(String)
    /// Passed by systemd (`linkcondd.socket`), already bound and listening.
    case inherited(CInt)
    /// A TCP address on loopback, for Prometheus to scrape `/metrics` (`--metrics-listen`).
    case tcp(host: String, port: Int)
}

extension SocketSource: CustomStringConvertible {
    /// Where clients connect, for messages.
    public var description: String {
        switch self {
        case .path(let path): path
        case .inherited(let descriptor): "the socket systemd passed (fd \(descriptor))"
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }
}
