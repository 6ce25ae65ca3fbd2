import LinkCondClient
import Foundation
import Conditions
import ControlHTTP
import LinkCondDaemon
import Logging
import NIOPosix
import ServiceLifecycle
import ShapingTestSupport

/// Runs `body` against the real daemon and its real control socket, in this process, with the
/// model kernel in place of netlink: what user space costs, without a kernel's share.
func withModelDaemon<Result: Sendable>(
    profileDirectory: String, _ body: @Sendable (ControlClient) async throws -> Result
) async throws -> Result {
    let socketPath = "/tmp/lc-bench-\(getpid()).sock"
    let stateDirectory = "/dev/shm/lc-bench-state-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
    let quiet = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
    let daemon = try await LinkCondDaemon(
        configuration: DaemonConfiguration(
            interface: "eth0", socket: .path(socketPath), profileDirectories: [profileDirectory], exemptions: .default,
            // On tmpfs, as /run/linkcond/state is on a systemd machine.
            stateDirectory: stateDirectory, historyFile: nil
        ),
        kernel: FakeKernel(interfaces: ["eth0"]), group: MultiThreadedEventLoopGroup.singleton, logger: quiet
    )
    let group = ServiceGroup(services: [daemon], logger: quiet)
    return try await withThrowingTaskGroup(of: Result?.self) { tasks in
        tasks.addTask {
            try await group.run()
            return nil
        }
        let client = ControlClient(socketPath: socketPath)
        for attempt in 0..<500 where (try? await client.status()) == nil {
            guard attempt < 499 else { throw BenchError("the in-process daemon did not start") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let result = try await body(client)
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return result
    }
}
