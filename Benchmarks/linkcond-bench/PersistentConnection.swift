import ControlAPI
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One keep-alive HTTP/1.1 connection to the daemon, so that a measured switch is the request
/// and its reply, not a process start or a connect.
final class PersistentConnection {
    private let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
    private var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

    init(socketPath: String) async throws {
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        inbound = channel.inbound.makeAsyncIterator()
        outbound = channel.outbound
    }

    /// Sends one request and returns the status and body.
    func send(_ method: HTTPMethod, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "linkcondd")
        if let body {
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.count))
        }
        try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)))
        if let body {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
        }
        try await outbound.write(.end(nil))
        var status = 0
        var data = Data()
        while let part = try await inbound.next() {
            switch part {
            case .head(let head): status = Int(head.status.code)
            case .body(let chunk): data.append(contentsOf: chunk.readableBytesView)
            case .end: return (status, data)
            }
        }
        throw BenchError("linkcondd closed the connection")
    }

    /// Activates `profile` (or turns shaping off for `off`) and fails on anything but 200.
    func activate(_ profile: String) async throws {
        let (status, data) = profile == "off"
            ? try await send(.DELETE, APIPath.condition)
            : try await send(.PUT, APIPath.condition, body: try JSONEncoder().encode(ActivateRequest(profile: profile)))
        guard status == 200 else {
            throw BenchError("activating \(profile): HTTP \(status): \(String(decoding: data, as: UTF8.self))")
        }
    }

    func close() async {
        try? await channel.channel.close()
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
