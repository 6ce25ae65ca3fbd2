import Glibc
import Pcapng

/// What `run --capture` adds to the summary: what the trace says the command talked to, and a
/// warning for each request it sent in the clear.
extension RunSummary {
    struct Trace: Codable, Equatable {
        /// The trace's file, as given to `--capture`.
        var file: String
        var peers: [TraceSummary.Peer]
        var plaintextHTTP: [TraceSummary.PlaintextRequest]
        /// Packets the summary could not read (cut short, or not IP).
        var unreadablePackets: UInt64
        /// Whether the summary read the whole trace, or its first `readLimit` bytes.
        var wholeTrace: Bool

        init(file: String, summary: TraceSummary, wholeTrace: Bool) {
            self.file = file
            peers = summary.peers
            plaintextHTTP = summary.plaintextHTTP
            unreadablePackets = summary.unreadable
            self.wholeTrace = wholeTrace
        }

        /// A trace larger than this is summarized from its beginning.
        static let readLimit = 256 << 20

        /// The trace `run` has just written to `path`, read back and summarized; why not, when
        /// it cannot be (standard output, a pipe, an unreadable file).
        static func read(_ path: String) -> Result<Trace, TraceReadFailure> {
            guard path != "-" else { return .failure(TraceReadFailure("it went to standard output")) }
            // Non-blocking, so that a FIFO (`--capture /dev/stdout` into a pipe) is not waited
            // on for a writer; it is then refused as not a file.
            let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard descriptor >= 0 else { return .failure(TraceReadFailure(String(cString: strerror(errno)))) }
            defer { close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { return .failure(TraceReadFailure(String(cString: strerror(errno)))) }
            guard status.st_mode & S_IFMT == S_IFREG else { return .failure(TraceReadFailure("it is not a regular file")) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var whole = false
            while bytes.count < readLimit {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, min($0.count, readLimit - bytes.count)) }
                if count < 0, errno == EINTR { continue }
                guard count >= 0 else { return .failure(TraceReadFailure(String(cString: strerror(errno)))) }
                if count == 0 {
                    whole = true
                    break
                }
                bytes += chunk[..<count]
            }
            do {
                let trace = try PcapngReader(bytes, allowingTruncatedEnd: !whole)
                return .success(Trace(file: path, summary: TraceSummary(trace), wholeTrace: whole))
            } catch {
                return .failure(TraceReadFailure("\(error)"))
            }
        }

        /// One line per peer, then a warning per plaintext request: what `run` tells on stderr.
        var lines: [String] {
            var lines: [String] = []
            if peers.isEmpty {
                lines.append("\(file): no packets of the command's")
            }
            for peer in peers {
                let names = peer.names.isEmpty ? "" : " (\(peer.names.joined(separator: ", ")))"
                var line = "talked to \(peer.address)\(names), \(peer.services.joined(separator: " ")): "
                line += "sent \(peer.bytesOut) bytes in \(Self.counted(peer.packetsOut, "packet")), received \(peer.bytesIn) bytes in \(Self.counted(peer.packetsIn, "packet"))"
                if peer.retransmissions > 0 || peer.resets > 0 {
                    line += "; \(Self.counted(peer.retransmissions, "TCP retransmission")), \(Self.counted(peer.resets, "reset"))"
                }
                lines.append(line)
            }
            for request in plaintextHTTP {
                lines.append("warning: plaintext HTTP: \(request.method) http://\(request.host)\(request.path) (to \(request.peer)): anyone on the path can read and change it")
            }
            if !wholeTrace {
                lines.append("(what the first \(Self.readLimit >> 20) MiB of \(file) say)")
            }
            return lines
        }

        private static func counted(_ count: UInt64, _ noun: String) -> String {
            "\(count) \(noun)\(count == 1 ? "" : "s")"
        }
    }

    struct TraceReadFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
