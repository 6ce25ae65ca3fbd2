import ArgumentParser
import ControlAPI
import Dispatch
import Glibc
import LinkCondClient
import NIOCore
import Synchronization

struct Capture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a condition's packets to a pcapng file, or to stdout for tshark or Wireshark.",
        discussion: """
            Both directions, as the app sees them after the condition (each packet flagged \
            inbound or outbound), only the condition's own packets (with --to, that peer's; with \
            --device, that device's), and each change of the condition as a note at its time. \
            Runs until interrupted (the trace then closes with its statistics; a second Ctrl-C \
            stops at once), or --for or --count. Needs root or the linkcond group: a trace holds \
            other people's packets. linkcond writes the file; the daemon never does.

              sudo linkcond capture --to api.example.com -w api.pcapng --for 30s
              sudo linkcond capture -w - | tshark -r -
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions

    @Option(name: .customShort("w"), help: ArgumentHelp("The pcapng file to write, replacing it; '-' for stdout.", valueName: "file"))
    var file: String

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (30s, 5m).", valueName: "duration"))
    var duration: String?

    @Option(help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: UInt64?

    @Option(help: ArgumentHelp("Keep at most this many bytes of each packet (64 to 262144; default all).", valueName: "bytes"))
    var snaplen: Int?

    func validate() throws {
        if file == "-" && isatty(STDOUT_FILENO) == 1 {
            throw ValidationError("pcapng is binary: give -w FILE, or pipe stdout into a reader (linkcond capture -w - | tshark -r -)")
        }
        if let duration {
            do {
                _ = try LeaseDuration(parsing: duration)
            } catch {
                throw ValidationError("--for \(error)")
            }
        }
        if let snaplen, !(64...262_144).contains(snaplen) {
            throw ValidationError("--snaplen must be from 64 to 262144 bytes")
        }
    }

    func run() async throws {
        let output = TraceOutput(path: file)
        defer { output.close() }
        let client = connection.client
        let condition = target.condition
        let limits = CaptureLimits(duration: duration, count: count, snapLength: snaplen)
        let stop = CaptureStop()
        let capture = Task {
            try await client.capture(condition: condition, limits: limits, stop: stop) { chunk in try output.write(chunk) }
        }
        // The first signal asks the daemon to close the trace with its statistics; a second,
        // or a daemon that has not within 5 s, hangs up.
        let interruption = CaptureInterruption { times in
            if times == 1 {
                stop.request()
                Task {
                    try await Task.sleep(for: .seconds(5))
                    capture.cancel()
                }
            } else {
                capture.cancel()
            }
        }
        defer { interruption.stop() }
        do {
            try await capture.value
        } catch let error as TraceOutput.WriteError where error.reader {
            // The reader of stdout went away (`| head`): the capture ends with it.
        } catch let error as ControlClientError {
            _ = try await withDaemon { () async throws(ControlClientError) in throw error }
        } catch let error as TraceOutput.WriteError {
            warn("cannot write \(file): \(error)")
            throw ExitCode.failure
        } catch where interruption.happened {
        }
        try output.finish()
    }
}

/// Where a trace goes: a file the client opens (as the user who runs it), or stdout. Blocks
/// are written whole: bytes are held until the block they belong to has arrived, so that an
/// interrupted capture leaves a file that ends where a block does.
final class TraceOutput: @unchecked Sendable {
    struct WriteError: Error, CustomStringConvertible {
        var code: Int32
        /// The reader of a pipe went away.
        var reader: Bool { code == EPIPE }
        var description: String { String(cString: strerror(code)) }
    }

    private let path: String
    /// Opened with the first bytes: a refused capture leaves no file behind.
    private var descriptor: Int32 = -1
    private var pending: [UInt8] = []
    /// A block larger than this is not one linkcondd writes.
    static let largestBlock = 1 << 20

    init(path: String) {
        self.path = path
        if path == "-" {
            descriptor = STDOUT_FILENO
            signal(SIGPIPE, SIG_IGN)
        }
    }

    private var owned: Bool { path != "-" }

    /// Whether any block has been written.
    private(set) var hasBegun = false

    private func opened() throws -> Int32 {
        if descriptor < 0 {
            descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw WriteError(code: errno) }
        }
        return descriptor
    }

    func write(_ chunk: ByteBuffer) throws {
        pending += chunk.readableBytesView
        var whole = 0
        while pending.count - whole >= 8 {
            let length = Int(pending[whole + 4]) | Int(pending[whole + 5]) << 8 | Int(pending[whole + 6]) << 16 | Int(pending[whole + 7]) << 24
            guard length >= 12, length <= Self.largestBlock else { throw WriteError(code: EBADMSG) }
            guard pending.count - whole >= length else { break }
            whole += length
        }
        guard whole > 0 else { return }
        try writeAll(pending[..<whole], to: try opened())
        hasBegun = true
        pending.removeFirst(whole)
    }

    /// Anything left is a block the daemon never finished: dropped, so the file stays whole.
    func finish() throws {
        if owned, descriptor >= 0, fsync(descriptor) != 0, errno != EINVAL { throw WriteError(code: errno) }
    }

    func close() {
        if owned, descriptor >= 0 { Glibc.close(descriptor) }
    }

    private func writeAll(_ bytes: ArraySlice<UInt8>, to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw WriteError(code: errno)
                }
                offset += written
            }
        }
    }
}

/// SIGINT and SIGTERM end a capture between two blocks rather than the process.
final class CaptureInterruption: @unchecked Sendable {
    private final class Count: Sendable {
        private let value = Mutex(0)
        func increment() -> Int { value.withLock { $0 += 1; return $0 } }
        var current: Int { value.withLock { $0 } }
    }

    private let count = Count()
    /// Made and cancelled by the command's task alone.
    private var sources: [any DispatchSourceSignal] = []

    var happened: Bool { count.current > 0 }

    /// `action` hears how many signals came so far.
    init(_ action: @escaping @Sendable (_ times: Int) -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [count] in
                action(count.increment())
            }
            source.resume()
            sources.append(source)
        }
    }

    func stop() {
        for source in sources { source.cancel() }
        sources = []
    }
}
