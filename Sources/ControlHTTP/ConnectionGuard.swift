import Conditions
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1

/// Keeps one control connection within `ControlLimits`' time limits, and answers what the HTTP
/// decoder cannot parse with a JSON error instead of NIO's empty 400.
///
/// Sits after `HTTPServerPipelineHandler`, so it sees whole requests and responses one at a
/// time. Its partner `ConnectionGuard.FrontEnd` sits before the decoder: it tells the guard when
/// the first byte of a request arrives, and writes the 408 for a request that never completes
/// (the pipeline handler allows no response before a request has ended).
package final class ConnectionGuard: ChannelDuplexHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias InboundOut = HTTPServerRequestPart
    package typealias OutboundIn = HTTPServerResponsePart
    package typealias OutboundOut = HTTPServerResponsePart

    /// Fired into the pipeline by the server once a lease's response stream is open: the
    /// connection may then stay quiet for as long as the lease lasts.
    struct LeaseHeld {}

    private enum State {
        /// Waiting for a request: the idle timeout runs.
        case idle
        /// A request has begun: the request timeout runs.
        case receiving
        /// A whole request is in; the daemon works on it.
        case processing
        /// The answer is being written: the response timeout runs.
        case responding
        /// A lease's response stream is open: no time limit.
        case holdingLease
    }

    private let limits: ControlLimits
    private var state = State.idle
    private var requestTimer: Scheduled<Void>?
    private var responseTimer: Scheduled<Void>?

    package init(limits: ControlLimits) {
        self.limits = limits
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            waitForRequest(context: context)
        }
    }

    package func channelActive(context: ChannelHandlerContext) {
        waitForRequest(context: context)
        context.fireChannelActive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        requestTimer?.cancel()
        responseTimer?.cancel()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        requestTimer?.cancel()
        responseTimer?.cancel()
        context.fireChannelInactive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if case .idle = state { requestStarted(context: context) }
        case .body:
            break
        case .end:
            if case .receiving = state {
                state = .processing
                requestTimer?.cancel()
            }
        }
        context.fireChannelRead(data)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is FrontEnd.RequestBytesArrived:
            if case .idle = state { requestStarted(context: context) }
        case is LeaseHeld:
            state = .holdingLease
            requestTimer?.cancel()
            responseTimer?.cancel()
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            if case .holdingLease = state { break }
            state = .responding
            let loopBound = context.loopBound
            responseTimer?.cancel()
            responseTimer = context.eventLoop.scheduleTask(in: limits.responseTimeout) {
                loopBound.value.close(promise: nil)
            }
        case .end:
            if case .holdingLease = state { break }
            let written = promise ?? context.eventLoop.makePromise()
            let timer = responseTimer
            written.futureResult.whenComplete { _ in timer?.cancel() }
            context.write(data, promise: written)
            waitForRequest(context: context)
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }

    /// A request the decoder cannot parse gets a JSON 400 (the decoder then closes the
    /// connection), unless an answer is already under way.
    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        switch state {
        case .responding, .holdingLease:
            break
        case .idle, .receiving, .processing:
            state = .responding
            requestTimer?.cancel()
            let reply = ControlError.badRequest("malformed HTTP request (\(parserError))").reply
            for part in Self.parts(of: reply, closing: true) {
                context.write(wrapOutboundOut(part), promise: nil)
            }
            context.flush()
        }
        context.close(promise: nil)
    }

    private func requestStarted(context: ChannelHandlerContext) {
        state = .receiving
        requestTimer?.cancel()
        let loopBound = context.loopBound
        requestTimer = context.eventLoop.scheduleTask(in: limits.requestTimeout) { [limits] in
            let context = loopBound.value
            let reply = ControlError(
                .requestTimeout, "the request did not arrive whole within \(limits.requestTimeout.nanoseconds / 1_000_000_000) seconds"
            ).reply
            context.triggerUserOutboundEvent(FrontEnd.AnswerAndClose(bytes: Self.encode(reply)), promise: nil)
        }
    }

    private func waitForRequest(context: ChannelHandlerContext) {
        state = .idle
        requestTimer?.cancel()
        let loopBound = context.loopBound
        requestTimer = context.eventLoop.scheduleTask(in: limits.idleTimeout) {
            loopBound.value.close(promise: nil)
        }
        context.triggerUserOutboundEvent(FrontEnd.WatchForRequest(), promise: nil)
    }

    /// A reply as response parts, closing the connection after it.
    static func parts(of reply: ControlReply, closing: Bool) -> [HTTPServerResponsePart] {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        if !reply.allow.isEmpty {
            headers.add(name: "Allow", value: reply.allow.map(\.rawValue).joined(separator: ", "))
        }
        if closing {
            headers.add(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers)
        return [.head(head), .body(.byteBuffer(ByteBuffer(bytes: reply.body))), .end(nil)]
    }

    /// A reply as the bytes of a whole HTTP/1.1 response that closes the connection, for
    /// writing where no HTTP encoder is in the way.
    static func encode(_ reply: ControlReply) -> [UInt8] {
        var text = "HTTP/1.1 \(reply.status.code) \(reply.status.reasonPhrase)\r\n"
        text += "Content-Type: \(reply.contentType)\r\nContent-Length: \(reply.body.count)\r\nConnection: close\r\n\r\n"
        return Array(text.utf8) + reply.body
    }
}

extension ConnectionGuard {
    /// The guard's partner at the front of the pipeline, where bytes are still raw.
    package final class FrontEnd: ChannelDuplexHandler {
        package typealias InboundIn = ByteBuffer
        package typealias InboundOut = ByteBuffer
        package typealias OutboundIn = ByteBuffer
        package typealias OutboundOut = ByteBuffer

        /// The first bytes of a request arrived (before the decoder has a whole head).
        struct RequestBytesArrived {}
        /// From the guard: the connection waits for a request again.
        struct WatchForRequest {}
        /// From the guard: write these bytes, whatever the HTTP state, then close.
        struct AnswerAndClose {
            var bytes: [UInt8]
        }

        private var watching = true

        package init() {}

        package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if watching {
                watching = false
                context.fireUserInboundEventTriggered(RequestBytesArrived())
            }
            context.fireChannelRead(data)
        }

        package func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
            switch event {
            case is WatchForRequest:
                watching = true
                promise?.succeed()
            case let answer as AnswerAndClose:
                let loopBound = context.loopBound
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: answer.bytes))).whenComplete { _ in
                    loopBound.value.close(promise: nil)
                }
                promise?.succeed()
            default:
                context.triggerUserOutboundEvent(event, promise: promise)
            }
        }
    }
}
