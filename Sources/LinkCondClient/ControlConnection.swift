import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import NIOPosix

/// One keep-alive HTTP/1.1 connection to the daemon: the single place where the client
/// writes requests and reads answers. Lives inside `ControlClient.withConnection`.
public final class ControlConnection {
    private var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

    init(inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>, outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>) {
        self.inbound = inbound.makeAsyncIterator()
        self.outbound = outbound
    }

    /// Sends one request and decodes the answer, or throws the daemon's error document.
    public func request<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<ActivateRequest>.none
    ) async throws(ControlClientError) -> Response {
        let payload = body.flatMap { try? JSONEncoder().encode($0) }
        let (status, data) = try await exchange(method, path, payload: payload)
        guard (200..<300).contains(status) else {
            throw ControlClient.refusal(status: status, body: data)
                ?? ControlClientError(code: .badResponse, message: "linkcondd answered \(status) without an error document", status: status)
        }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw ControlClientError(code: .badResponse, message: "cannot read linkcondd's answer to \(method) \(path): \(error)")
        }
    }

    /// Sends one request and returns the status and body as they came.
    public func exchange(_ method: HTTPMethod, _ path: String, payload: Data?) async throws(ControlClientError) -> (Int, Data) {
        do {
            try await outbound.write(contentsOf: ControlClient.requestParts(method, path, payload: payload, closing: false))
            var status = 0
            var body = ByteBuffer()
            while let part = try await inbound.next() {
                switch part {
                case .head(let head): status = Int(head.status.code)
                case .body(var chunk): body.writeBuffer(&chunk)
                case .end: return (status, Data(body.readableBytesView))
                }
            }
        } catch {
            throw ControlClientError(code: .badResponse, message: "the connection to linkcondd failed during \(method) \(path): \(error)")
        }
        throw ControlClientError(code: .badResponse, message: "linkcondd closed the connection before answering \(method) \(path)")
    }
}

extension ControlClient {
    /// Runs `body` with one connection to the daemon, for any number of requests; the
    /// connection closes when `body` returns.
    public func withConnection<Result: Sendable>(
        _ body: (ControlConnection) async throws -> Result
    ) async throws -> Result {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await connect(halfClosure: false)
        } catch {
            throw connectionError(error)
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(ControlConnection(inbound: inbound, outbound: outbound))
        }
    }
}
