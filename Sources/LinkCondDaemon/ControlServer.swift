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

/// HTTP/1.1 over the daemon's Unix socket, one task per connection, each connection tagged
/// with its peer's credentials.
struct ControlServer: Sendable {
    /// Requests larger than this are refused: the API's bodies are a few dozen bytes.
    static let maximumBodyBytes = 64 * 1024

    let socket: SocketSource
    let router: ControlRouter
    let group: any EventLoopGroup
    let logger: Logger

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// A connection on its way from the listening socket to the accept loop, with who is on the
    /// other side.
    ///
    /// It is wrapped for async use only once the loop takes it: when the listening socket closes
    /// in the instant between accept and delivery, NIO drops the value unseen, and a wrapped one
    /// would trap on its unfinished writer. A dropped one is closed by its deinit instead.
    final class Accepted: Sendable {
        let channel: any Channel
        let peer: PeerCredentials

        init(channel: any Channel, peer: PeerCredentials) {
            self.channel = channel
            self.peer = peer
        }

        deinit {
            channel.close(promise: nil)
        }

        /// Wraps the channel and starts reading: reads stay off until the async handlers are in
        /// place, so no request part is lost on the way.
        func connection() async throws -> Connection {
            let channel = self.channel
            return try await channel.eventLoop.submit {
                let connection = try Connection(wrappingChannelSynchronously: channel)
                try channel.syncOptions?.setOption(.autoRead, value: true)
                return connection
            }.get()
        }
    }

    /// Binds the socket, or adopts the one systemd passed (socket activation).
    func bind() async throws -> NIOAsyncChannel<Accepted, Never> {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.autoRead, value: false)
        switch socket {
        case .inherited(let descriptor):
            return try await bootstrap.bind(descriptor, childChannelInitializer: Self.initialize)
        case .path(let path):
            try SocketFile.prepare(path: path)
            let server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: Self.initialize)
            try SocketFile.openToEveryone(path: path)
            return server
        }
    }

    @Sendable
    private static func initialize(_ channel: any Channel) -> EventLoopFuture<Accepted> {
        guard let options = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<PeerCredentials> = options.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SO_PEERCRED)
        return credentials.flatMapThrowing { peer in
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            return Accepted(channel: channel, peer: peer)
        }
    }

    /// Serves until the listening socket closes, then ends every connection still open.
    func serve(_ server: NIOAsyncChannel<Accepted, Never>) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await accepted in connections {
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
            try await accepted.connection().executeThenClose { inbound, outbound in
                var parts = inbound.makeAsyncIterator()
                while let request = try await Self.nextRequest(from: &parts) {
                    guard let head = request.head else { return }
                    let route: Route = request.tooLarge
                        ? .reply(ControlError(.payloadTooLarge, code: "payload-too-large", message: "request bodies are limited to \(Self.maximumBodyBytes) bytes").reply)
                        : await router.route(ControlRequest(method: head.method, uri: head.uri, body: request.body, requester: requester))
                    switch route {
                    case .reply(let reply):
                        logger.debug("\(head.method) \(head.uri) -> \(reply.status.code) for \(requester)")
                        try await write(reply, for: head, to: outbound)
                        if !head.isKeepAlive || request.tooLarge { return }
                    case .hold(let lease, let maximum):
                        try await hold(lease, maximum: maximum, head: head, requester: requester, channel: accepted.channel, parts: &parts, outbound: outbound)
                        return
                    }
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
    }

    /// One request, or `nil` when the client closed the connection.
    private static func nextRequest(
        from parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator
    ) async throws -> (head: HTTPRequestHead?, body: [UInt8], tooLarge: Bool)? {
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var tooLarge = false
        while let part = try await parts.next() {
            switch part {
            case .head(let requestHead):
                head = requestHead
            case .body(let buffer):
                if body.count + buffer.readableBytes > maximumBodyBytes {
                    tooLarge = true
                } else {
                    body.append(contentsOf: buffer.readableBytesView)
                }
            case .end:
                return (head, body, tooLarge)
            }
        }
        return nil
    }

    /// `POST /v1/leases`: answers with one JSON line when the lease is in force, keeps the
    /// response open while the client keeps the connection, and ends the lease when it closes.
    private func hold(
        _ lease: LeaseRequest, maximum: LeaseDuration?, head: HTTPRequestHead, requester: Requester, channel: any Channel,
        parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        let ended: @Sendable (LeaseEvent) -> Void = { event in
            // Expiry, take-over or shutdown: tell the client and hang up; the read loop below
            // then finds the connection closed and has nothing left to release.
            Task {
                try? await outbound.write(contentsOf: [.body(.byteBuffer(Self.line(event))), .end(nil)])
                try? await channel.close()
            }
        }
        let held: (leaseID: UInt64, status: StatusResponse)
        do {
            held = try await router.conditioner.hold(
                lease.profile, by: requester, maximum: maximum, force: lease.force ?? false,
                replacingForeign: lease.replaceForeign ?? false, onEnd: ended
            )
        } catch {
            try await write(ControlError(error).reply, for: head, to: outbound)
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        try await outbound.write(contentsOf: [
            .head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)),
            .body(.byteBuffer(Self.line(LeaseEvent(event: .active, status: held.status)))),
        ])
        // Anything more the client sends is ignored; its end (or failure) ends the lease.
        while (try? await parts.next()) != nil {}
        guard let restored = await router.conditioner.release(leaseID: held.leaseID) else { return }
        try? await outbound.write(contentsOf: [
            .body(.byteBuffer(Self.line(LeaseEvent(event: .ended, reason: .released, status: restored)))),
            .end(nil),
        ])
    }

    private static func line(_ event: LeaseEvent) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = (try? encoder.encode(event)) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }

    private func write(
        _ reply: ControlReply, for request: HTTPRequestHead,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(reply.body.count))
        if !reply.allow.isEmpty {
            headers.add(name: "Allow", value: reply.allow.map(\.rawValue).joined(separator: ", "))
        }
        if !request.isKeepAlive {
            headers.add(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(version: request.version, status: reply.status, headers: headers)
        try await outbound.write(contentsOf: [
            .head(head),
            .body(.byteBuffer(ByteBuffer(bytes: reply.body))),
            .end(nil),
        ])
    }
}

/// `struct ucred` as `SO_PEERCRED` fills it; Glibc hides the C type behind `_GNU_SOURCE`.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// Where the control socket comes from.
public enum SocketSource: Sendable, Equatable {
    /// Bound by the daemon at this path.
    case path(String)
    /// Passed by systemd (`linkcondd.socket`), already bound and listening.
    case inherited(CInt)
}
