import ArgumentParser
import Foundation
import Glibc

/// Time from starting the daemon to its control socket accepting a connection.
struct Startup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start linkcondd, time until its socket accepts connections, then leave it running and print its pid."
    )

    struct Report: Codable {
        var milliseconds: Double
        var pid: Int32
    }

    @Option(help: "The socket the daemon will listen on.") var socket: String
    @Option(help: "Write the report here as JSON.") var out: String?
    @Argument(help: "The daemon's command line.") var command: [String]

    func run() throws {
        try? FileManager.default.removeItem(atPath: socket)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        let start = monotonicNanoseconds()
        try process.run()
        while !canConnect(socket) {
            guard process.isRunning else { throw BenchError("linkcondd exited before it was ready") }
            guard monotonicNanoseconds() - start < 60_000_000_000 else { throw BenchError("linkcondd not ready after 60 s") }
            usleep(200)
        }
        let report = Report(milliseconds: Double(monotonicNanoseconds() - start) / 1e6, pid: process.processIdentifier)
        print(String(format: "ready after %.1f ms, pid %d", report.milliseconds, report.pid))
        if let out {
            try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: out))
        }
    }

    private func canConnect(_ path: String) -> Bool {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8.prefix(buffer.count - 1))
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
