import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// HTTP/1.1 over the daemon's Unix socket, one task per connection.
struct ControlServer: Sendable {
    /// Requests larger than this are refused: the API's bodies are a few dozen bytes.
    static let maximumBodyBytes = 64 * 1024

    let socketPath: String
    let router: ControlRouter
    let group: any EventLoopGroup
    let logger: Logger

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Binds the socket. Refuses to take over a socket another daemon is listening on; removes
    /// a stale one left by a daemon that died.
    func bind() async throws -> NIOAsyncChannel<Connection, Never> {
        try SocketFile.prepare(path: socketPath)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        try SocketFile.restrictAccess(path: socketPath)
        return server
    }

    /// Serves until cancelled, then closes every connection.
    func serve(_ server: NIOAsyncChannel<Connection, Never>) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { await handle(connection) }
                }
            }
        }
    }

    private func handle(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body: [UInt8] = []
                var tooLarge = false
                for try await part in inbound {
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                        body.removeAll(keepingCapacity: true)
                        tooLarge = false
                    case .body(let buffer):
                        if body.count + buffer.readableBytes > Self.maximumBodyBytes {
                            tooLarge = true
                        } else {
                            body.append(contentsOf: buffer.readableBytesView)
                        }
                    case .end:
                        guard let requestHead = head else { continue }
                        let reply = tooLarge
                            ? ControlError(.payloadTooLarge, code: "payload-too-large", message: "request bodies are limited to \(Self.maximumBodyBytes) bytes").reply
                            : await router.respond(to: ControlRequest(method: requestHead.method, path: Self.path(of: requestHead.uri), body: body))
                        logger.debug("\(requestHead.method) \(requestHead.uri) -> \(reply.status.code)")
                        try await write(reply, for: requestHead, to: outbound)
                        if !requestHead.isKeepAlive || tooLarge { return }
                    }
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
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

    static func path(of uri: String) -> String {
        String(uri.prefix { $0 != "?" && $0 != "#" })
    }
}
