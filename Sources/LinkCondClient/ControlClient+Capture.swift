import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1

/// A capture's limits, as `GET …/capture` takes them: it ends at the first one reached.
public struct CaptureLimits: Sendable, Equatable {
    /// `30s`, `5m`: how long it runs.
    public var duration: String?
    /// How many packets it writes.
    public var count: UInt64?
    /// The bytes of each packet kept (64 to 262 144).
    public var snapLength: Int?
    /// Also write the packets the condition dropped, each marked with why.
    public var keepDropped: Bool

    public init(duration: String? = nil, count: UInt64? = nil, snapLength: Int? = nil, keepDropped: Bool = false) {
        self.duration = duration
        self.count = count
        self.snapLength = snapLength
        self.keepDropped = keepDropped
    }

    var query: String {
        let items = [
            duration.map { "for=\(PercentEncoding.encode($0))" }, count.map { "count=\($0)" }, snapLength.map { "snaplen=\($0)" },
            keepDropped ? "dropped=keep" : nil,
        ].compactMap { $0 }
        return items.isEmpty ? "" : "?" + items.joined(separator: "&")
    }
}

/// Ends a capture the way its client means it to: the client stops sending (a half-close), and
/// the daemon writes the trace's closing statistics before it ends the stream.
public final class CaptureStop: Sendable {
    private let requests: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (requests, continuation) = AsyncStream<Void>.makeStream()
    }

    public func request() {
        continuation.finish()
    }

    func requested() async {
        for await _ in requests {}
    }
}

extension ControlClient {
    /// Streams the packets of the condition `condition` names (the daemon's own when `nil`) as
    /// pcapng, each chunk handed to `write` as it comes, until a limit of `limits` is reached,
    /// the daemon ends it, or `write` throws (the caller stops). Throws the daemon's refusal
    /// before any byte when the capture cannot begin. `stop`, once requested, ends it with its
    /// closing statistics.
    public func capture(
        condition: String? = nil, limits: CaptureLimits = CaptureLimits(), stop: CaptureStop? = nil, write: (ByteBuffer) async throws -> Void
    ) async throws {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await connect(halfClosure: true)
        } catch {
            throw connectionError(error)
        }
        let path = (condition.map(APIPath.conditionCapture) ?? APIPath.conditionCapture) + limits.query
        try await channel.executeThenClose { inbound, outbound in
            // Until the stream begins, the daemon has `replyTimeout` to answer; then it may be
            // quiet for as long as no packet comes.
            let alarm = ReplyAlarm(closing: channel.channel, after: replyTimeout) { $0.bodyParts > 0 }
            defer { alarm.cancel() }
            try await outbound.write(contentsOf: Self.requestParts(.GET, path, payload: nil, closing: true))
            let stopping = stop.map { stop in
                Task {
                    await stop.requested()
                    outbound.finish()
                }
            }
            defer { stopping?.cancel() }
            var status = 0
            var refusal = Data()
            for try await part in inbound {
                switch part {
                case .head(let head):
                    status = Int(head.status.code)
                    if status == 200 { alarm.cancel() }
                case .body(let chunk) where status == 200:
                    try await write(chunk)
                case .body(let chunk):
                    refusal.append(contentsOf: chunk.readableBytesView)
                    guard refusal.count <= Self.maximumReplyBytes else {
                        throw ControlClientError(code: .badResponse, message: "an error answer over \(Self.maximumReplyBytes) bytes, more than linkcondd ever sends")
                    }
                case .end:
                    guard status == 200 else {
                        throw Self.refusal(status: status, body: refusal)
                            ?? ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) answered the capture with status \(status)")
                    }
                    return
                }
            }
            if alarm.rang {
                throw Self.noAnswer(socketPath, to: "GET \(path)", within: replyTimeout)
            }
            if status != 200 {
                throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) closed the capture's connection before answering")
            }
        }
    }
}
