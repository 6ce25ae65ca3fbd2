import ControlAPI
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

extension ControlClient {
    /// Holds a profile while `body` runs: the lease lives as long as this connection, so it ends
    /// when `body` returns, and also when this process dies. `interrupted` hears about an end
    /// the client did not cause (expiry, take-over, daemon shutdown) while `body` still runs.
    ///
    /// Returns what `body` returned and the daemon's last word on the lease (`nil` if the
    /// connection was lost).
    public func withLease<Result: Sendable>(
        _ lease: LeaseRequest,
        interrupted: @escaping @Sendable (LeaseEvent) -> Void,
        body: (StatusResponse) async throws -> Result
    ) async throws -> (Result, LeaseEvent?) {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await connect(halfClosure: true)
        } catch {
            throw connectionError(error)
        }
        return try await channel.executeThenClose { inbound, outbound in
            let payload = try JSONEncoder().encode(lease)
            try await outbound.write(contentsOf: Self.requestParts(.POST, APIPath.leases, payload: payload, closing: false))

            let (items, continuation) = AsyncThrowingStream<LeaseStreamItem, any Error>.makeStream()
            return try await withThrowingTaskGroup(of: Void.self) { readers in
                readers.addTask { try await Self.read(inbound, into: continuation) }
                var iterator = items.makeAsyncIterator()
                let active = try await Self.firstEvent(from: &iterator)

                // Later lines arrive while `body` runs; the last one matters after it returns.
                let lastWord = LastWord()
                readers.addTask {
                    while let item = try await iterator.next() {
                        guard case .event(let event) = item else { continue }
                        await lastWord.set(event)
                        if event.event == .ended, event.reason != .released {
                            interrupted(event)
                        }
                    }
                }
                let result = try await body(active.status)
                // Half-close: the daemon ends the lease, answers with a last line and hangs up.
                outbound.finish()
                try await readers.waitForAll()
                return (result, await lastWord.event)
            }
        }
    }

    /// The `active` line, or the daemon's refusal as a `ControlClientError`.
    private static func firstEvent(from iterator: inout AsyncThrowingStream<LeaseStreamItem, any Error>.AsyncIterator) async throws -> LeaseEvent {
        var status = 0
        var errorBody = Data()
        while let item = try await iterator.next() {
            switch item {
            case .head(let code):
                status = code
            case .event(let event) where status == 200:
                return event
            case .event:
                continue
            case .errorBody(let data):
                errorBody.append(data)
            }
        }
        if let refusal = refusal(status: status, body: errorBody) {
            throw refusal
        }
        throw ControlClientError(code: .badResponse, message: "linkcondd closed the lease connection before the lease began (status \(status))")
    }

    /// Splits the response into its status and newline-delimited events.
    private static func read(
        _ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>,
        into continuation: AsyncThrowingStream<LeaseStreamItem, any Error>.Continuation
    ) async throws {
        var pending = Data()
        var ok = false
        let decoder = JSONDecoder()
        do {
            for try await part in inbound {
                switch part {
                case .head(let head):
                    ok = head.status == .ok
                    continuation.yield(.head(Int(head.status.code)))
                case .body(let chunk):
                    pending.append(contentsOf: chunk.readableBytesView)
                    guard ok else {
                        continuation.yield(.errorBody(pending))
                        pending.removeAll()
                        continue
                    }
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = pending[pending.startIndex..<newline]
                        pending = Data(pending[pending.index(after: newline)...])
                        if let event = try? decoder.decode(LeaseEvent.self, from: line) {
                            continuation.yield(.event(event))
                        }
                    }
                case .end:
                    continuation.finish()
                    return
                }
            }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
}

enum LeaseStreamItem: Sendable {
    case head(Int)
    case event(LeaseEvent)
    case errorBody(Data)
}

/// The latest event seen, shared between the reader and the caller.
private actor LastWord {
    var event: LeaseEvent?

    func set(_ event: LeaseEvent) {
        self.event = event
    }
}
