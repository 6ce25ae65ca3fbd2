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
    @OptionGroup var dropped: DroppedPacketsOption

    @Option(name: .customShort("w"), help: ArgumentHelp("The pcapng file to write, replacing it; '-' for stdout.", valueName: "file"))
    var file: String

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (30s, 5m).", valueName: "duration"))
    var duration: String?

    @Option(help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: UInt64?

    @Option(help: ArgumentHelp("Keep at most this many bytes of each packet (64 to 262144; default 4026: every packet of a 1500-byte MTU whole).", valueName: "bytes"))
    var snaplen: Int?

    @Option(name: .customLong("file-size"), help: ArgumentHelp("Start a new file once this much is written (100MB, 1GB): FILE-00001.pcapng, FILE-00002.pcapng, …, each a whole trace.", valueName: "size"))
    var fileSize: String?

    @Option(help: ArgumentHelp("With --file-size, keep only the newest N files (a ring for long captures).", valueName: "n"))
    var files: Int?

    @Option(name: .customLong("max-size"), help: ArgumentHelp("Stop once this much is written in all (500MB, 2GB).", valueName: "size"))
    var maxSize: String?

    /// The parsed --file-size, --files and --max-size.
    var fileLimits: TraceFileLimits {
        get throws {
            TraceFileLimits(
                fileSize: try fileSize.map { try ByteSize(parsing: $0, range: Self.fileSizes).bytes },
                files: files,
                totalSize: try maxSize.map { try ByteSize(parsing: $0, range: Self.fileSizes).bytes }
            )
        }
    }

    /// A file holds at least its header and a few packets; 1 TB is beyond any disk's use.
    static let fileSizes: ClosedRange<UInt64> = 64_000...1_000_000_000_000

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
        if file == "-" && (fileSize != nil || files != nil) {
            throw ValidationError("--file-size and --files write files; they cannot go to stdout (-w -)")
        }
        if files != nil && fileSize == nil {
            throw ValidationError("--files needs --file-size: the ring turns to a new file once one is that large")
        }
        if let files, !(1...100_000).contains(files) {
            throw ValidationError("--files must be from 1 to 100000")
        }
        do {
            _ = try fileLimits
        } catch let error as ByteSizeError {
            throw ValidationError("\(error.text == fileSize ? "--file-size" : "--max-size") \(error)")
        }
    }

    func run() async throws {
        let stop = CaptureStop()
        let output = TraceOutput(path: file, limits: try fileLimits) { stop.request() }
        defer { output.close() }
        let client = connection.client
        let condition = target.condition
        let limits = CaptureLimits(duration: duration, count: count, snapLength: snaplen, keepDropped: dropped.keepDropped)
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
        for line in output.closingLines { warn(line) }
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
