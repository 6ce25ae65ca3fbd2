import ArgumentParser
import Foundation
import Glibc

/// What a hostile local user can do to the control socket: open as many connections as it can,
/// send half a request on each, and open new ones as the daemon closes old ones.
struct Flood: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hold as many half-sent requests open on linkcondd's socket as it allows, for a while."
    )

    struct Result: Codable {
        var seconds: Double
        var target: Int
        /// Connections the daemon accepted and kept (half-sent requests), at most at once.
        var heldAtMost: Int
        var opened: Int
        /// Connections answered with 503 too-many-connections at once.
        var refusedWith503: Int
        /// Connections the daemon closed after its time limits (or with a 408).
        var closedByDaemon: Int
        var connectFailures: Int
    }

    @Option(help: "linkcondd's control socket.") var socket: String
    @Option(help: "Connections to try to hold at once.") var connections = 2000
    @Option(help: "How long to keep it up, seconds.") var seconds = 20.0
    @Option(help: "Stop earlier, as soon as this file exists.") var until: String?
    @Option(help: "Write the result here as JSON.") var out: String?

    func run() throws {
        var open: [Int32] = []
        var result = Result(seconds: seconds, target: connections, heldAtMost: 0, opened: 0, refusedWith503: 0, closedByDaemon: 0, connectFailures: 0)
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        while monotonicNanoseconds() < deadline, !stopRequested {
            // Top up to the target, then see which ones the daemon answered or closed.
            var attempts = 0
            while open.count < connections, attempts < 200 {
                attempts += 1
                guard let descriptor = connectHalfSent() else {
                    result.connectFailures += 1
                    break
                }
                result.opened += 1
                open.append(descriptor)
            }
            usleep(20_000)
            var still: [Int32] = []
            for descriptor in open {
                switch peek(descriptor) {
                case .quiet: still.append(descriptor)
                case .answered(let status):
                    if status == 503 { result.refusedWith503 += 1 } else { result.closedByDaemon += 1 }
                    close(descriptor)
                case .closed:
                    result.closedByDaemon += 1
                    close(descriptor)
                }
            }
            open = still
            result.heldAtMost = max(result.heldAtMost, open.count)
        }
        open.forEach { close($0) }
        print("flood: \(result.opened) opened, held at most \(result.heldAtMost) at once, \(result.refusedWith503) refused with 503, \(result.closedByDaemon) closed by the daemon, \(result.connectFailures) connects failed")
        if let out {
            try JSONEncoder().encode(result).write(to: URL(fileURLWithPath: out))
        }
    }

    private var stopRequested: Bool {
        guard let until else { return false }
        return access(until, F_OK) == 0
    }

    private func connectHalfSent() -> Int32? {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            socket.utf8CString.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(buffer.count))) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        let partial = "GET /v1/status HTTP/1.1\r\nHost: flood\r\nX-Slow: "
        _ = partial.withCString { send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        return descriptor
    }

    private enum State { case quiet, answered(Int), closed }

    private func peek(_ descriptor: Int32) -> State {
        var buffer = [UInt8](repeating: 0, count: 512)
        let got = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if got > 0 {
            let text = String(decoding: buffer[..<got], as: UTF8.self)
            let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return .answered(status)
        }
        if got == 0 { return .closed }
        return errno == EAGAIN || errno == EWOULDBLOCK ? .quiet : .closed
    }
}
