import LinkCondClient
import Synchronization

/// `run --capture FILE`: the run's condition captured from before its command starts until
/// after it ends, written to FILE as it comes.
final class TraceRecording: Sendable {
    private let task: Task<Void, any Error>
    private let output: TraceOutput
    private let state: State
    private let stopper: CaptureStop

    private final class State: Sendable {
        private let ended = Mutex(false)
        func end() { ended.withLock { $0 = true } }
        var hasEnded: Bool { ended.withLock { $0 } }
    }

    /// How long the daemon may take to pass on the last packets once the command has ended:
    /// it reads the kernel's rings every 10 to 50 ms.
    static let drain = Duration.milliseconds(200)

    private init(task: Task<Void, any Error>, output: TraceOutput, state: State, stopper: CaptureStop) {
        self.task = task
        self.output = output
        self.state = state
        self.stopper = stopper
    }

    /// A capture of `condition` that has begun (its first bytes written), or the daemon's refusal.
    static func start(client: ControlClient, condition: String, path: String, keepDropped: Bool = false) async throws -> TraceRecording {
        let output = TraceOutput(path: path)
        let state = State()
        let stopper = CaptureStop()
        let task = Task {
            defer { state.end() }
            try await client.capture(condition: condition, limits: CaptureLimits(keepDropped: keepDropped), stop: stopper) { chunk in try output.write(chunk) }
        }
        let deadline = ContinuousClock.now + client.replyTimeout
        while !output.hasBegun, !state.hasEnded, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if !output.hasBegun {
            task.cancel()
            do {
                try await task.value
            } catch let error as ControlClientError {
                throw error
            } catch {
                throw ControlClientError(code: .badResponse, message: "the capture for --capture did not begin: \(error)")
            }
            throw ControlClientError(code: .badResponse, message: "the capture for --capture did not begin within \(client.replyTimeout)")
        }
        return TraceRecording(task: task, output: output, state: state, stopper: stopper)
    }

    /// Ends the capture once the daemon has passed on the last packets (it closes the trace
    /// with its statistics), and closes the file; a sentence on what went wrong, if something did.
    func stop() async -> String? {
        try? await Task.sleep(for: Self.drain)
        stopper.request()
        // The daemon ends the stream at its next poll; one that does not is hung up on.
        let hangUp = Task {
            try await Task.sleep(for: .seconds(5))
            task.cancel()
        }
        defer { hangUp.cancel() }
        var failure: String?
        do {
            try await task.value
        } catch is CancellationError {
        } catch let error as TraceOutput.WriteError {
            failure = "the trace could not be written: \(error)"
        } catch {
            failure = "the capture ended badly: \(error)"
        }
        do {
            try output.finish()
        } catch {
            failure = failure ?? "the trace could not be written: \(error)"
        }
        output.close()
        return failure
    }
}
