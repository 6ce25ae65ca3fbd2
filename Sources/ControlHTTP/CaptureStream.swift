import Capture
import Conditions
import ControlAPI
import LinkCondVocabulary
import Logging
import NIOCore
import Synchronization

/// A capture the router let begin (`GET /v1/conditions/{id}/capture`): the server starts it,
/// streams its pcapng while the client reads and ends it at its limit or when the client goes.
/// Who may capture, and which error answers a refusal, is the router's to say.
package struct CaptureStream: Sendable {
    let conditioner: Conditioner
    let id: ConditionID?
    let options: CaptureOptions
    let requester: Requester
    let logger: Logger

    /// How often the stream moves while packets flow, and while none do: at 2 ms a 4 MB ring
    /// of 4 KiB frames keeps up with 50 000 packets a second.
    static let busyPoll: Duration = .milliseconds(2)
    static let quietPoll: Duration = .milliseconds(50)
    static let contentType = "application/x-pcapng"

    /// A capture running: its session, what the conditioner granted, and the notes it is told.
    package final class Running: @unchecked Sendable {
        let session: CaptureSession
        let grant: CaptureGrant
        let notes: PendingNotes
        let dropsAtStart: UInt64?

        init(session: CaptureSession, grant: CaptureGrant, notes: PendingNotes, dropsAtStart: UInt64?) {
            self.session = session
            self.grant = grant
            self.notes = notes
            self.dropsAtStart = dropsAtStart
        }
    }

    package enum Beginning: Sendable {
        case running(Running)
        case refused(ControlReply)
    }

    /// Opens the capture, or answers why not.
    package func begin() async -> Beginning {
        let notes = PendingNotes()
        let grant: CaptureGrant
        do throws(ConditionsRefusal) {
            grant = try await conditioner.beginCapture(on: id, by: requester, notes: { notes.add($0, downlink: PendingNotes.Downlink(name: $1)) })
        } catch {
            return .refused(ControlError(error).reply)
        }
        let scope = CaptureSession.Scope(
            interface: grant.interface, ifb: grant.ifb, namespacePath: grant.namespacePath,
            filter: CaptureFilter(networks: grant.networks, port: grant.port, transports: grant.transports, portIsLocalServer: grant.portIsLocalServer),
            facesTheApp: grant.facesTheApp, targetName: grant.condition.description
        )
        do {
            let session = try CaptureSession(scope, limits: CaptureSession.Limits(snapLength: options.snapLength), keepingDropped: options.keepDropped)
            notes.add(grant.firstNote)
            return .running(Running(session: session, grant: grant, notes: notes, dropsAtStart: await drops(of: grant.condition)))
        } catch {
            logger.error("capture of \(grant.condition): \(error)")
            await conditioner.endCapture(grant, by: requester, detail: "it could not begin: \(error)")
            let code: ErrorCode = switch error.code {
            case .namespaceGone: .namespaceGone
            case .badRequest: .badRequest
            case .kernelRefused: .kernelRefused
            }
            return .refused(ControlError(code, "cannot capture the packets of \(grant.condition): \(error)").reply)
        }
    }

    /// The trace's first bytes: its section header and interfaces.
    package func header(of running: Running) -> ByteBuffer {
        ByteBuffer(bytes: running.session.header(
            application: "linkcond \(LinkCondVersion.current)",
            comment: "linkcond capture \(running.grant.serial) of the condition \(running.grant.condition)"
        ))
    }

    /// Writes the capture's blocks through `write` until a limit is reached or writing fails
    /// (the client gone); then ends it, the closing statistics written when the client is still there.
    package func stream(
        _ running: Running, clientEnded: () -> Bool, write: (ByteBuffer) async throws -> Void, sleep: (Duration) async throws -> Void
    ) async {
        let deadline = options.duration.map { ContinuousClock.now + .milliseconds($0.milliseconds) }
        var written: UInt64 = 0
        var ending = "the client closed the stream"
        do {
            while true {
                let (told, ifb) = running.notes.take()
                if let ifb { running.session.follow(ifb: ifb.name) }
                let left = options.count.map { $0 - written } ?? .max
                let blocks = try running.session.poll(notes: told, packetLimit: left)
                written = running.session.packetsWritten
                if !blocks.isEmpty { try await write(ByteBuffer(bytes: blocks)) }
                if let count = options.count, written >= count {
                    ending = "\(count) packets written"
                    break
                }
                if let deadline, ContinuousClock.now >= deadline {
                    ending = "its time was up"
                    break
                }
                if clientEnded() {
                    ending = "the client ended it"
                    break
                }
                if running.session.interfaceIsGone {
                    ending = "its interface went away"
                    break
                }
                try await sleep(blocks.isEmpty ? Self.quietPoll : Self.busyPoll)
            }
            let dropped = await droppedSince(running)
            let comment = "\(written) packets written; \(dropped.map { "\($0) dropped by the condition" } ?? "the condition's drops unknown")"
                + Self.keptDrops(running.session) + "; ended: \(ending)"
            try await write(ByteBuffer(bytes: running.session.statistics(conditionDrops: dropped, comment: comment)))
        } catch let error as CaptureError {
            ending = "reading failed: \(error)"
            logger.error("capture \(running.grant.serial) of \(running.grant.condition): \(error)")
        } catch {
            // Writing failed: the client went away, or the daemon is stopping.
        }
        await conditioner.endCapture(running.grant, by: requester, detail: "\(written) packets written (\(ending))")
    }

    /// What the statistics' comment says of the dropped packets kept, when the capture keeps them.
    static func keptDrops(_ session: CaptureSession) -> String {
        guard session.keepsDropped else { return "" }
        let lost = session.droppedOverran ? " (the kernel's drop monitor lost some: its socket was full)" : ""
        return ", \(session.droppedWritten) of them kept in the trace\(lost)"
    }

    /// Ends a capture that never streamed.
    package func end(_ running: Running, detail: String) async {
        await conditioner.endCapture(running.grant, by: requester, detail: detail)
    }

    private func droppedSince(_ running: Running) async -> UInt64? {
        guard let start = running.dropsAtStart, let end = await drops(of: running.grant.condition) else { return nil }
        return end >= start ? end - start : nil
    }

    /// Packets the condition dropped so far, both ways (loss, full queues, a failure's rules):
    /// none while it has nothing in the kernel.
    private func drops(of condition: ConditionID) async -> UInt64? {
        guard let reading = await conditioner.counterReadings().first(where: { $0.id == condition.description }) else { return 0 }
        return reading.uplink.drops + reading.downlink.drops + (reading.failedPackets ?? 0)
    }
}

/// The notes the conditioner tells a capture, with the time it told them, and the IFB its
/// condition's downlink goes through after the last of them; kept until its stream writes them.
package final class PendingNotes: Sendable {
    /// The IFB a change left in force, `name` `nil` when the condition has no tree.
    struct Downlink: Equatable {
        var name: String?
    }

    private struct Waiting {
        var notes: [(nanoseconds: UInt64, text: String)] = []
        var downlink: Downlink?
    }

    private let waiting = Mutex(Waiting())
    /// More than this waiting (nobody writing them): the oldest go.
    static let most = 1_000

    /// A note, and where the change it tells of left the downlink (`nil`: no change told it).
    func add(_ note: String, downlink: Downlink? = nil) {
        let now = CaptureSession.now()
        waiting.withLock { waiting in
            waiting.notes.append((now, note))
            if waiting.notes.count > Self.most { waiting.notes.removeFirst(waiting.notes.count - Self.most) }
            if let downlink { waiting.downlink = downlink }
        }
    }

    /// The notes told since the last call, and the downlink after them when a change told one.
    func take() -> ([(nanoseconds: UInt64, text: String)], Downlink?) {
        waiting.withLock { waiting in
            defer { waiting = Waiting() }
            return (waiting.notes, waiting.downlink)
        }
    }
}

/// Tells a capture's stream that its client stopped sending (a half-close: `linkcond run`
/// ending its capture as the command ends), so that it closes with its statistics. First in
/// the pipeline, so that it hears the event before anything acts on it.
final class InputEndWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    private let ended = Mutex(false)

    var hasEnded: Bool { ended.withLock { $0 } }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent {
            ended.withLock { $0 = true }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
