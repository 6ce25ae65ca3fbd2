import NIOCore
import NIOHTTP1

/// One browser connection: whole requests in (the aggregator before it bounds them), answers
/// out, one at a time. A request must arrive whole within `requestTimeout` of the connection's
/// start or the last answer, or the connection is closed: a slow sender holds nothing for long.
final class ConsoleHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOHTTPServerRequestFull
    typealias OutboundOut = HTTPServerResponsePart

    private let requestTimeout: TimeAmount
    private let respond: @Sendable (ConsoleRequest) async -> ConsoleResponse
    private var timer: Scheduled<Void>?
    private var busy = false

    init(requestTimeout: TimeAmount, respond: @escaping @Sendable (ConsoleRequest) async -> ConsoleResponse) {
        self.requestTimeout = requestTimeout
        self.respond = respond
    }

    func channelActive(context: ChannelHandlerContext) {
        armTimer(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let full = unwrapInboundIn(data)
        timer?.cancel()
        busy = true
        let request = ConsoleRequest(
            method: full.head.method, uri: full.head.uri, headers: full.head.headers,
            body: full.body.map { Array($0.readableBytesView) } ?? [], peer: nil
        )
        let keepAlive = full.head.isKeepAlive
        let version = full.head.version
        let respond = self.respond
        let promise = context.eventLoop.makePromise(of: ConsoleResponse.self)
        promise.completeWithTask { await respond(request) }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { response in
            let (handler, context) = loopBound.value
            handler.write(response, version: version, keepAlive: keepAlive, context: context)
        }
    }

    private func write(_ response: ConsoleResponse, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = response.headers
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: response.status, headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: response.body.count)
        buffer.writeBytes(response.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        busy = false
        if keepAlive {
            armTimer(context: context)
        } else {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            done.whenComplete { _ in loopBound.value.close(promise: nil) }
        }
    }

    private func armTimer(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: requestTimeout) {
            let (handler, context) = loopBound.value
            if !handler.busy { context.close(promise: nil) }
        }
    }
}
