import ControlAPI
import LinkCondClient
import Foundation
import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOPosix
import Profiles
import ServiceLifecycle
import Shaping
import ShapingTestSupport
import Testing

@Suite("Daemon and client over a real Unix socket")
struct DaemonEndToEndTests {
    /// Runs the daemon service on a model kernel while `body` talks to it, then shuts it down
    /// the way SIGTERM does.
    func withDaemon(kernel: FakeKernel, metricsListen: SocketSource? = nil, _ body: (ControlClient, String) async throws -> Void) async throws {
        let socketPath = TestDaemon.socketPath()
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
            name: Slow Net
            downlink: { bandwidth: 32kbit, delay: 100ms }
            uplink: { bandwidth: 32kbit, delay: 100ms }
            dns: { delay: 200ms }
            """.write(to: directory.appendingPathComponent("slow-net.yaml"), atomically: true, encoding: .utf8)
        let daemon = try await LinkCondDaemon(
            configuration: DaemonConfiguration(
                interface: "eth0", socket: .path(socketPath), profileDirectories: [directory.path], exemptions: .default,
                stateDirectory: directory.appendingPathComponent("run").path,
                historyFile: directory.appendingPathComponent("history.jsonl").path, metricsListen: metricsListen
            ),
            kernel: kernel, group: MultiThreadedEventLoopGroup.singleton, logger: .quiet
        )
        let group = ServiceGroup(services: [daemon], logger: .quiet)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let client = ControlClient(socketPath: socketPath)
            try await eventually { (try? await client.status()) != nil }
            try await body(client, socketPath)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(!FileManager.default.fileExists(atPath: socketPath))
    }

    /// Polls `condition` every 10 ms for up to 2 s; the assertion that follows says what failed.
    func eventually(_ condition: () async -> Bool) async throws {
        for _ in 0..<200 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test("Activate, switch, status and a graceful stop that removes the shaping")
    func lifecycle() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        try await withDaemon(kernel: kernel) { client, _ in
            let status = try await client.activate("slow net")
            #expect(status.profile?.name == "Slow Net")
            #expect(try await client.status().active)
            #expect(try await client.profile(named: "slow-net").uplink.delay == "100ms")
            #expect(try await client.profiles().profiles.count == 1)
        }
        #expect(kernel.fullState == pristine)
    }

    @Test("The socket is open to every user; requests carry the peer's credentials")
    func peerCredentials() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, socketPath in
            let attributes = try FileManager.default.attributesOfItem(atPath: socketPath)
            #expect((attributes[.posixPermissions] as? Int) == 0o666)
            _ = try await client.activate("Slow Net")
            let entry = try #require(try await client.history(limit: 1).entries.last)
            #expect(entry.requester?.uid == getuid())
            #expect(entry.requester?.pid == getpid())
        }
    }

    @Test("A client-bound lease holds while the body runs and is gone after")
    func lease() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let (inside, last) = try await client.withLease(LeaseRequest(profile: "Slow Net"), interrupted: { _ in }) { status in
                #expect(status.lease?.kind == .clientBound)
                return try await client.status()
            }
            #expect(inside.profile?.name == "Slow Net")
            guard case .ended(let event) = last else {
                Issue.record("the daemon did not confirm the end: \(last)")
                return
            }
            #expect(event.reason == .released)
            #expect(try await client.status().active == false)
        }
    }

    @Test("A lease ends when its client disappears without a word")
    func clientVanishes() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let holder = Task {
                try await client.withLease(LeaseRequest(profile: "Slow Net"), interrupted: { _ in }) { _ in
                    try await Task.sleep(for: .seconds(30))
                }
            }
            try await eventually { (try? await client.status())?.active == true }
            #expect(try await client.status().lease != nil)
            holder.cancel()
            _ = await holder.result
            try await eventually { (try? await client.status())?.active == false }
            #expect(try await client.status().active == false)
        }
    }

    @Test("A lease's client hears when the lease expires under it")
    func leaseExpires() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let heard = OutcomeBox()
            let (_, last) = try await client.withLease(LeaseRequest(profile: "Slow Net", for: "200ms"), interrupted: { heard.add($0) }) { _ in
                try await Task.sleep(for: .milliseconds(700))
            }
            #expect(heard.reasons == [.expired])
            #expect(OutcomeBox.reason(last) == .expired)
        }
    }

    @Test("A 409 tells the holder that the lease is theirs, and how to end it")
    func leaseConflict() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            _ = try await client.activate("Slow Net", for: "1h")
            let error = await #expect(throws: ControlClientError.self) { try await client.activate("Slow Net") }
            #expect(error?.status == 409)
            #expect(error?.message.contains("you already hold 'Slow Net'") == true)
            #expect(error?.message.contains("releasing it brings the previous condition back") == true)
            _ = try await client.deactivate(force: true)
        }
    }

    @Test("API errors reach the client with their code and suggestions")
    func apiErrors() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let error = await #expect(throws: ControlClientError.self) { try await client.activate("slow nte") }
            #expect(error?.code == .api)
            #expect(error?.status == 404)
            #expect(error?.apiError?.suggestions == ["Slow Net"])
        }
    }

    @Test("A second daemon refuses a socket that is in use")
    func socketInUse() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { _, socketPath in
            #expect(throws: DaemonError.self) { try SocketFile.prepare(path: socketPath) }
        }
    }

    @Test("A daemon that stops while a command runs under a lease: the client hears why, and the command's result comes back")
    func stopDuringLease() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let heard = OutcomeBox()
        let socketPath = TestDaemon.socketPath()
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try "name: Slow Net\nuplink: { delay: 100ms }\n".write(to: directory.appendingPathComponent("slow-net.yaml"), atomically: true, encoding: .utf8)
        let historyFile = directory.appendingPathComponent("history.jsonl")
        let daemon = try await LinkCondDaemon(
            configuration: DaemonConfiguration(
                interface: "eth0", socket: .path(socketPath), profileDirectories: [directory.path], exemptions: .default,
                stateDirectory: directory.appendingPathComponent("run").path, historyFile: historyFile.path
            ),
            kernel: kernel, group: MultiThreadedEventLoopGroup.singleton, logger: .quiet
        )
        let group = ServiceGroup(services: [daemon], logger: .quiet)
        let client = ControlClient(socketPath: socketPath)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await eventually { (try? await client.status()) != nil }
            let (result, outcome) = try await client.withLease(LeaseRequest(profile: "Slow Net"), interrupted: { heard.add($0) }) { _ in
                await group.triggerGracefulShutdown()
                // The command runs on until the daemon has said why its lease ended (on a
                // busy machine, stopping took longer than a fixed half second).
                try await eventually { heard.count > 0 }
                return 42
            }
            #expect(result == 42)
            #expect(heard.reasons == [.shutdown])
            #expect(OutcomeBox.reason(outcome) == .shutdown)
            try await tasks.waitForAll()
        }
        #expect(kernel.fullState == pristine)
        let history = try String(contentsOf: historyFile, encoding: .utf8).split(separator: "\n")
        #expect(history.last?.contains("\"reason\":\"shutdown\"") == true)
        #expect(!history.contains { $0.contains("client closed its connection") })
    }

    @Test("A daemon that vanishes mid-lease: the command's result still comes back, with the loss")
    func daemonVanishes() async throws {
        let socketPath = TestDaemon.socketPath()
        let server = try VanishingServer(path: socketPath)
        let heard = OutcomeBox()
        let (result, outcome) = try await ControlClient(socketPath: socketPath).withLease(LeaseRequest(profile: "Slow Net"), interrupted: { heard.add($0) }) { _ in
            server.vanish()
            try await Task.sleep(for: .milliseconds(300))
            return 7
        }
        #expect(result == 7)
        guard case .connectionLost = outcome else {
            Issue.record("expected a lost connection, got \(outcome)")
            return
        }
        #expect(heard.count == 1)
    }

    @Test("The daemon refuses to start on a missing interface")
    func missingInterface() async throws {
        let error = await #expect(throws: DaemonError.self) {
            _ = try await LinkCondDaemon(
                configuration: DaemonConfiguration(interface: "eth9", socket: .path(TestDaemon.socketPath()), profileDirectories: [], exemptions: .default),
                kernel: FakeKernel(interfaces: ["eth0"]), group: MultiThreadedEventLoopGroup.singleton, logger: .quiet
            )
        }
        #expect(error?.message.contains("eth9 does not exist") == true)
    }

    @Test("Stopping while clients keep connecting ends every connection cleanly")
    func stopDuringConnectionStorm() async throws {
        // A connection accepted in the instant the listening socket closes used to be dropped
        // by NIO before the server saw it, and its unfinished writer trapped the daemon.
        for _ in 0..<25 {
            let storm = StormBox()
            try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
                for _ in 0..<4 {
                    storm.add(Task.detached {
                        while !Task.isCancelled { _ = try? await client.status() }
                    })
                }
                try await Task.sleep(for: .milliseconds(15))
            }
            await storm.stop()
        }
    }

    @Test("A request sent with the write side closed straight after still gets its answer")
    func halfClosedRequest() async throws {
        // NIO reads a half-closed socket as soon as it sees the end; a request that reached the
        // pipeline before its async handlers were in place used to be lost, and the client waited.
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { _, socketPath in
            let requests = [
                "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n",
                "PUT /v1/condition HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
            ]
            for request in requests {
                for _ in 0..<20 {
                    let answer = await RawExchange.halfClosed(path: socketPath, sending: request)
                    #expect(answer.hasPrefix("HTTP/1.1 200") || answer.hasPrefix("HTTP/1.1 400"), "\(request.prefix(20)): \(answer.prefix(40))")
                }
            }
        }
    }

    @Test("A client waits for room while the daemon's listen backlog is full, as a blocking connect would")
    func fullBacklog() async throws {
        let path = TestDaemon.socketPath()
        let server = try BusyServer(path: path)
        defer { server.stop() }
        server.fillBacklog()
        server.startAccepting(after: .milliseconds(300))
        let started = ContinuousClock.now
        let status = try await ControlClient(socketPath: path).status()
        #expect(status.interface == "eth0")
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        #expect(server.fillers > 0)
    }

    @Test("The client names the socket when no daemon listens")
    func daemonNotRunning() async throws {
        let path = TestDaemon.socketPath()
        let error = await #expect(throws: ControlClientError.self) { try await ControlClient(socketPath: path).status() }
        #expect(error?.code == .daemonNotRunning)
        #expect(error?.message.contains(path) == true)
    }
}

/// Collects what a lease's client heard.
final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [LeaseOutcome] = []

    func add(_ outcome: LeaseOutcome) { lock.withLock { outcomes.append(outcome) } }
    var count: Int { lock.withLock { outcomes.count } }
    var reasons: [LeaseEvent.EndReason?] { lock.withLock { outcomes.map(Self.reason) } }

    static func reason(_ outcome: LeaseOutcome) -> LeaseEvent.EndReason? {
        if case .ended(let event) = outcome { return event.reason }
        return nil
    }
}

/// Answers one lease request as the daemon would, then drops the connection without a word:
/// a daemon killed with SIGKILL.
final class VanishingServer: @unchecked Sendable {
    private let listener: Int32
    private var connection: Int32 = -1

    init(path: String) throws {
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = withUnixAddress(path) { bind(listener, $0, $1) }
        guard bound == 0, listen(listener, 1) == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread { [self] in
            connection = accept(listener, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(connection, &buffer, buffer.count)
            let status = #"{"active":true,"exemptions":[],"id":"eth0","ifb":"lc-eth0","interface":"eth0","isDefault":true,"since":"2026-01-01T00:00:00Z"}"#
            let line = #"{"event":"active","status":"# + status + "}\n"
            let chunk = String(line.utf8.count, radix: 16) + "\r\n" + line + "\r\n"
            let response = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk
            _ = response.withCString { write(connection, $0, strlen($0)) }
        }
    }

    func vanish() {
        close(connection)
        close(listener)
    }
}

/// One request on a fresh connection whose write side is shut at once, read to the end (at most
/// 5 s), on a thread of its own so that its blocking reads never hold up the daemon's tasks.
enum RawExchange {
    static func halfClosed(path: String, sending request: String) async -> String {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: exchange(path: path, request: request))
            }
        }
    }

    private static func exchange(path: String, request: String) -> String {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        let connected = withUnixAddress(path) { connect(descriptor, $0, $1) }
        guard connected == 0 else { return "connect failed: errno \(errno)" }
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = request.withCString { write(descriptor, $0, strlen($0)) }
        shutdown(descriptor, Int32(SHUT_WR))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                received += buffer[..<count]
            } else {
                if count < 0 { received += Array(" (no end within 5 s)".utf8) }
                break
            }
        }
        return String(decoding: received, as: UTF8.self)
    }
}

/// A listening socket whose backlog is filled with connections that send nothing, so that a
/// non-blocking connect gets EAGAIN; once it starts accepting, it drops those and answers the
/// first real request with a status document.
final class BusyServer: @unchecked Sendable {
    private let listener: Int32
    private let path: String
    private let lock = NSLock()
    private var waiting: [Int32] = []
    private(set) var fillers = 0

    init(path: String) throws {
        self.path = path
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard withUnixAddress(path, { bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    func fillBacklog() {
        for _ in 0..<64 {
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if withUnixAddress(path, { connect(descriptor, $0, $1) }) != 0 {
                close(descriptor)
                return
            }
            lock.withLock { waiting.append(descriptor) }
            fillers += 1
        }
    }

    /// After `delay`, the fillers hang up (so that their connections read as ended at once) and
    /// the server accepts, answering the first connection that sends a request. A request may
    /// take its time to come: on a busy machine a client took over 100 ms to write after connecting.
    func startAccepting(after delay: Duration) {
        Thread.detachNewThread { [self] in
            Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18)
            hangUpFillers()
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                var limit = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                var buffer = [UInt8](repeating: 0, count: 4096)
                if read(connection, &buffer, buffer.count) > 0 {
                    let body = #"{"active":false,"exemptions":[],"id":"eth0","ifb":"lc-eth0","interface":"eth0","isDefault":true,"since":"2026-01-01T00:00:00Z"}"#
                    let response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
                    _ = response.withCString { write(connection, $0, strlen($0)) }
                    close(connection)
                    return
                }
                close(connection)
            }
        }
    }

    private func hangUpFillers() {
        lock.withLock {
            waiting.forEach { close($0) }
            waiting = []
        }
    }

    func stop() {
        hangUpFillers()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}

/// `SocketFile.withAddress`, for tests whose paths always fit: -1 (as a failed call) if not.
func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    SocketFile.withAddress(of: path, body) ?? -1
}

/// The tasks of a connection storm, stopped once the daemon is gone.
private final class StormBox: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []

    func add(_ task: Task<Void, Never>) {
        lock.withLock { tasks.append(task) }
    }

    func stop() async {
        for task in lock.withLock({ tasks }) {
            task.cancel()
            await task.value
        }
    }
}
