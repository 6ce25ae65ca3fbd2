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

/// How a lease held by `withLease` ended, as far as the client could tell.
public enum LeaseOutcome: Sendable, Equatable {
    /// The daemon said it ended, and why: released when the body returned, or earlier by
    /// expiry, take-over or the daemon stopping.
    case ended(LeaseEvent)
    /// The connection broke, or the daemon went quiet, before it said the lease ended: it
    /// crashed or was killed. A restarted daemon does not restore such a lease.
    case connectionLost(String)
}

extension ControlClient {
    /// How long to wait for the daemon's last word after `body` returns.
    static let leaseGoodbyeTimeout = Duration.seconds(5)

    /// Holds a profile while `body` runs: the lease lives as long as this connection, so it ends
    /// when `body` returns, and also when this process dies. `interrupted` hears about an end
    /// the client did not cause (expiry, take-over, daemon stop) or a lost connection, while
    /// `body` still runs.
    ///
    /// Throws only if the lease never began; once it has, whatever happens to the daemon,
    /// `body` runs to its end and its result comes back with the outcome.
    public func withLease<Result: Sendable>(
        _ lease: LeaseRequest,
        interrupted: @escaping @Sendable (LeaseOutcome) -> Void,
        body: (StatusResponse) async throws -> Result
    ) async throws -> (Result, LeaseOutcome) {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await connect(halfClosure: true)
        } catch {
            throw connectionError(error)
        }
        let outcome = OutcomeBox()
        var result: Result?
        // Set once `body` has run: from then on a broken connection is an outcome, not an
        // error, and what `body` threw is what the caller gets.
        var bodyRan = false
        var bodyFailure: (any Error)?
        do {
            try await channel.executeThenClose { inbound, outbound in
                // Until the lease begins, the daemon has `replyTimeout` to say so; after, it may
                // stay quiet as long as the lease lasts.
                let alarm = ReplyAlarm(closing: channel.channel, after: replyTimeout) { $0.bodyParts > 0 }
                defer { alarm.cancel() }
                let payload = try JSONEncoder().encode(lease)
                try await outbound.write(contentsOf: Self.requestParts(.POST, APIPath.leases, payload: payload, closing: false))

                let (items, continuation) = AsyncStream<LeaseStreamItem>.makeStream()
                let (started, start) = AsyncStream<Swift.Result<LeaseEvent, ControlClientError>>.makeStream()
                try await withThrowingTaskGroup(of: Void.self) { readers in
                    readers.addTask { await Self.read(inbound, into: continuation) }
                    // One task reads the daemon's lines for the lease's whole life: the `active`
                    // line first, then the last word, which may come while `body` runs.
                    let watcher = Task {
                        var iterator = items.makeAsyncIterator()
                        do {
                            start.yield(.success(try await Self.firstEvent(from: &iterator, socketPath: socketPath)))
                        } catch let error as ControlClientError {
                            start.yield(.failure(error))
                            return
                        } catch {
                            return
                        }
                        start.finish()
                        while let item = await iterator.next() {
                            let heard: LeaseOutcome
                            switch item {
                            case .event(let event) where event.event == .ended: heard = .ended(event)
                            case .lost(let reason): heard = .connectionLost(reason)
                            default: continue
                            }
                            let first = outcome.value.withLock { current in
                                defer { if current == nil { current = heard } }
                                return current == nil
                            }
                            guard first else { continue }
                            if case .ended(let event) = heard, event.reason == .released { continue }
                            interrupted(heard)
                        }
                    }
                    var startedIterator = started.makeAsyncIterator()
                    let first = await startedIterator.next()
                    alarm.cancel()
                    if alarm.rang {
                        throw Self.noAnswer(socketPath, to: "POST \(APIPath.leases)", within: replyTimeout)
                    }
                    guard let first else {
                        throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) closed the lease connection before the lease began")
                    }
                    let active = try first.get()
                    do {
                        result = try await body(active.status)
                    } catch {
                        bodyFailure = error
                    }
                    bodyRan = true
                    // Half-close: the daemon ends the lease, answers with a last line and hangs up.
                    outbound.finish()
                    let said = await Self.waitUntil(watcher, timeout: Self.leaseGoodbyeTimeout)
                    if !said {
                        watcher.cancel()
                        readers.cancelAll()
                    }
                }
            }
        } catch let error as ControlClientError where !bodyRan {
            throw error
        } catch where !bodyRan && !ControlConnection.isHangUp(error) {
            // Connected, so something listens: the connection broke before the lease began.
            throw ControlClientError(code: .badResponse, message: "the connection to linkcondd at \(socketPath) failed before the lease began: \(error)")
        } catch where bodyRan {
            outcome.value.withLock { if $0 == nil { $0 = .connectionLost("\(error)") } }
        } catch {}
        if let bodyFailure {
            throw bodyFailure
        }
        guard let result else {
            throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) closed the lease connection before the lease began")
        }
        let final = outcome.value.withLock { $0 } ?? .connectionLost("linkcondd did not confirm the end of the lease within \(Self.leaseGoodbyeTimeout)")
        return (result, final)
    }

    /// Whether `task` finished within `timeout`.
    private static func waitUntil(_ task: Task<Void, Never>, timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await task.value; return true }
            group.addTask { try? await Task.sleep(for: timeout); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// The `active` line, or the daemon's refusal as a `ControlClientError`.
    private static func firstEvent(
        from iterator: inout AsyncStream<LeaseStreamItem>.AsyncIterator, socketPath: String
    ) async throws(ControlClientError) -> LeaseEvent {
        var status = 0
        var errorBody = Data()
        while let item = await iterator.next() {
            switch item {
            case .head(let code):
                status = code
            case .event(let event) where status == 200:
                return event
            case .event:
                continue
            case .errorBody(let data):
                errorBody.append(data)
            case .lost(let reason):
                if let refusal = refusal(status: status, body: errorBody) { throw refusal }
                throw ControlClientError(code: .badResponse, message: "the connection to linkcondd at \(socketPath) broke before the lease began: \(reason)")
            }
        }
        if let refusal = refusal(status: status, body: errorBody) {
            throw refusal
        }
        throw ControlClientError(code: .badResponse, message: "linkcondd at \(socketPath) closed the lease connection before the lease began (status \(status))")
    }

    /// Splits the response into its status and newline-delimited events; a broken connection
    /// becomes an item too, never an error.
    private static func read(
        _ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>,
        into continuation: AsyncStream<LeaseStreamItem>.Continuation
    ) async {
        var pending = Data()
        var errorBytes = 0
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
                    errorBytes += ok ? 0 : chunk.readableBytes
                    // A line, or a refusal, longer than any the daemon writes: not the daemon's.
                    guard pending.count <= maximumReplyBytes, errorBytes <= maximumReplyBytes else {
                        continuation.yield(.lost("an answer over \(maximumReplyBytes) bytes without a line's end, more than linkcondd ever sends"))
                        continuation.finish()
                        return
                    }
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
            continuation.yield(.lost("linkcondd closed the connection"))
        } catch {
            continuation.yield(.lost("\(error)"))
        }
        continuation.finish()
    }
}

/// The first outcome heard, shared between the reading task and the caller.
private final class OutcomeBox: Sendable {
    let value = Mutex<LeaseOutcome?>(nil)
}

enum LeaseStreamItem: Sendable {
    case head(Int)
    case event(LeaseEvent)
    case errorBody(Data)
    /// The connection ended without the response's end.
    case lost(String)
}
