import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive HTTP/1.1 connection to the daemon: the single place where the client
/// writes requests and reads answers. Lives inside `ControlClient.withConnection`.
public final class ControlConnection {
    private var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private let channel: any Channel
    private let socketPath: String
    private let replyTimeout: Duration
    /// Whole answers read so far: the next request's is the one after.
    private var answersRead = 0

    init(
        inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>, outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>,
        channel: any Channel, socketPath: String, replyTimeout: Duration
    ) {
        self.inbound = inbound.makeAsyncIterator()
        self.outbound = outbound
        self.channel = channel
        self.socketPath = socketPath
        self.replyTimeout = replyTimeout
    }

    /// Sends one request and decodes the answer, or throws the daemon's error document.
    public func request<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<ActivateRequest>.none
    ) async throws(ControlClientError) -> Response {
        let payload = body.flatMap { try? JSONEncoder().encode($0) }
        let (status, data) = try await exchange(method, path, payload: payload)
        guard (200..<300).contains(status) else {
            throw ControlClient.refusal(status: status, body: data)
                ?? ControlClientError(
                    code: .badResponse, message: "linkcondd at \(socketPath) answered \(method) \(path) with \(status) and no error document",
                    status: status
                )
        }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw ControlClientError(
                code: .badResponse,
                message: "linkcondd at \(socketPath) answered \(method) \(path) with something other than the document expected: \(Self.reason(error))"
            )
        }
    }

    /// Sends one request and returns the status and body as they came; gives up after
    /// `replyTimeout`, or when the answer outgrows `ControlClient.maximumReplyBytes`, closing the
    /// connection.
    public func exchange(_ method: HTTPMethod, _ path: String, payload: Data?) async throws(ControlClientError) -> (Int, Data) {
        let request = "\(method) \(path)"
        let alarm = ReplyAlarm(closing: channel, after: replyTimeout, awaitingAnswer: answersRead + 1)
        defer { alarm.cancel() }
        do {
            try await outbound.write(contentsOf: ControlClient.requestParts(method, path, payload: payload, closing: false))
            var status = 0
            var body = ByteBuffer()
            while let part = try await inbound.next() {
                switch part {
                case .head(let head):
                    status = Int(head.status.code)
                    if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > ControlClient.maximumReplyBytes {
                        throw tooLarge(request, bytes: length)
                    }
                case .body(var chunk):
                    guard body.readableBytes + chunk.readableBytes <= ControlClient.maximumReplyBytes else {
                        throw tooLarge(request, bytes: nil)
                    }
                    body.writeBuffer(&chunk)
                case .end:
                    answersRead += 1
                    return (status, Data(body.readableBytesView))
                }
            }
        } catch let error as ControlClientError {
            throw error
        } catch let error as HTTPParserError where !alarm.rang {
            if case .invalidEOFState = error {
                throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) hung up in the middle of its answer to \(request)")
            }
            throw ControlClientError(
                code: .badResponse,
                message: "what answered \(request) on \(socketPath) does not speak HTTP (\(error)): is that socket linkcondd's?"
            )
        } catch where !alarm.rang && !Self.isHangUp(error) {
            throw ControlClientError(code: .badResponse, message: "the connection to linkcondd at \(socketPath) failed during \(request): \(error)")
        } catch {}
        if alarm.rang {
            throw ControlClient.noAnswer(socketPath, to: request, within: replyTimeout)
        }
        throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) closed the connection before answering \(request)")
    }

    /// The answer is too large to be the daemon's: the connection closes, unread.
    private func tooLarge(_ request: String, bytes: Int?) -> ControlClientError {
        channel.close(promise: nil)
        let size = bytes.map { "of \($0) bytes" } ?? "over \(ControlClient.maximumReplyBytes) bytes"
        return ControlClientError(
            code: .badResponse, message: "linkcondd at \(socketPath) sent an answer \(size) to \(request), more than it ever sends; ignored"
        )
    }

    /// Whether `error` is the peer closing the connection under us (a reset, a broken pipe, a
    /// write to the channel its hang-up closed): what the user needs to hear is that it hung
    /// up, not which call noticed.
    static func isHangUp(_ error: any Error) -> Bool {
        switch error {
        case let error as IOError: return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        case let error as ChannelError: return error == .ioOnClosedChannel || error == .alreadyClosed || error == .eof
        default: return false
        }
    }

    /// Why a document could not be decoded, in one line.
    static func reason(_ error: any Error) -> String {
        func place(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "the document" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error as? DecodingError {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "\(place(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "no '\(key.stringValue)' in \(place(context.codingPath))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(place(context.codingPath)) is not what it should be (\(context.debugDescription))"
        default:
            return "\(error)"
        }
    }
}

/// Counts what a connection has received as it comes in, on its event loop, before any task
/// reads it: what a `ReplyAlarm` asks when it rings.
final class AnswerCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// Answers received whole.
    private(set) var answers = 0
    /// Parts of answers' bodies received: a lease's first line is one.
    private(set) var bodyParts = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: break
        case .body: bodyParts += 1
        case .end: answers += 1
        }
        context.fireChannelRead(data)
    }
}

/// Closes a connection whose answer has not come within a time; says whether it did.
///
/// With `answered`, the alarm stands down when the connection's `AnswerCounter` says that what it
/// waits for came in, even when the task that reads it runs late, as it may on a loaded machine.
struct ReplyAlarm {
    private final class State: Sendable {
        let rang = Mutex(false)
    }

    private let state = State()
    private let scheduled: Scheduled<Void>

    init(closing channel: any Channel, after timeout: Duration, unless answered: (@Sendable (AnswerCounter) -> Bool)? = nil) {
        let state = state
        scheduled = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            // Closed already (the far end hung up): that is what the reader hears, not a silence.
            guard channel.isActive else { return }
            if let answered, let counter = try? channel.pipeline.syncOperations.handler(type: AnswerCounter.self), answered(counter) {
                return
            }
            state.rang.withLock { $0 = true }
            channel.close(promise: nil)
        }
    }

    /// Stands down once the connection's `number`-th whole answer came in.
    init(closing channel: any Channel, after timeout: Duration, awaitingAnswer number: Int) {
        self.init(closing: channel, after: timeout) { $0.answers >= number }
    }

    var rang: Bool { state.rang.withLock { $0 } }

    func cancel() {
        scheduled.cancel()
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
            try await body(ControlConnection(
                inbound: inbound, outbound: outbound, channel: channel.channel, socketPath: socketPath, replyTimeout: replyTimeout
            ))
        }
    }

    /// The daemon took the connection and said nothing for `timeout`.
    static func noAnswer(_ socketPath: String, to request: String, within timeout: Duration) -> ControlClientError {
        ControlClientError(
            code: .noAnswer,
            message: "linkcondd at \(socketPath) did not answer \(request) within \(timeout): it is hung, or what listens there is not linkcondd (restart it with 'sudo systemctl restart linkcondd')"
        )
    }
}
