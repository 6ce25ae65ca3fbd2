import ControlAPI
import ControlClient
import Foundation
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
    func withDaemon(kernel: FakeKernel, _ body: (ControlClient, String) async throws -> Void) async throws {
        let socketPath = TestDaemon.socketPath()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-profiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
            name: Slow Net
            downlink: { bandwidth: 32kbit, delay: 100ms }
            uplink: { bandwidth: 32kbit, delay: 100ms }
            dns: { delay: 200ms }
            """.write(to: directory.appendingPathComponent("slow-net.yaml"), atomically: true, encoding: .utf8)
        let daemon = try await LinkCondDaemon(
            configuration: DaemonConfiguration(interface: "eth0", socketPath: socketPath, profileDirectories: [directory.path], exemptions: .default),
            kernel: kernel, group: MultiThreadedEventLoopGroup.singleton, logger: .quiet
        )
        let group = ServiceGroup(services: [daemon], logger: .quiet)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let client = ControlClient(socketPath: socketPath)
            for _ in 0..<200 where (try? await client.status()) == nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await body(client, socketPath)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(!FileManager.default.fileExists(atPath: socketPath))
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

    @Test("The daemon refuses to start on a missing interface")
    func missingInterface() async throws {
        let error = await #expect(throws: DaemonError.self) {
            _ = try await LinkCondDaemon(
                configuration: DaemonConfiguration(interface: "eth9", socketPath: TestDaemon.socketPath(), profileDirectories: [], exemptions: .default),
                kernel: FakeKernel(interfaces: ["eth0"]), group: MultiThreadedEventLoopGroup.singleton, logger: .quiet
            )
        }
        #expect(error?.message.contains("eth9 does not exist") == true)
    }

    @Test("The client names the socket when no daemon listens")
    func daemonNotRunning() async throws {
        let path = TestDaemon.socketPath()
        let error = await #expect(throws: ControlClientError.self) { try await ControlClient(socketPath: path).status() }
        #expect(error?.code == .daemonNotRunning)
        #expect(error?.message.contains(path) == true)
    }
}
