import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import Sandboxes
import Shaping
import ShapingTestSupport
import Synchronization
import Testing

/// Sandboxes of `run --isolated`, with the plumbing in memory: when the daemon joins a
/// namespace to the host, and that the sandbox goes with its lease, at restart and on failure.
@Suite("Sandboxes (run --isolated)")
struct SandboxConditionTests {
    static let pid: Int32 = 4343
    static let path = "/proc/4343/ns/net"
    static let id = ConditionID(interface: "eth0", namespace: .process(pid))

    /// Records what the daemon asked; `plumb` adds the sandbox's eth0 to the fake namespace.
    final class FakePlumbing: SandboxPlumbing, Sendable {
        let namespaces: FakeNamespaces
        let log = Mutex<[String]>([])
        let owner: UInt32
        let failing: Bool

        init(namespaces: FakeNamespaces, owner: UInt32 = 0, failing: Bool = false) {
            self.namespaces = namespaces
            self.owner = owner
            self.failing = failing
        }

        var calls: [String] { log.withLock { $0 } }

        /// Whether the pinned process still runs when asked; `false`: it exited meanwhile and its
        /// PID may be another's.
        let running = Mutex(true)

        func pin(process pid: Int32) -> PinnedProcess? {
            PinnedProcess(pid: pid, owner: owner, stillRunning: { self.running.withLock { $0 } })
        }

        func checkFresh(namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError) {
            log.withLock { $0.append("check \(path)") }
            let devices = namespaces.namespaces[path]?.kernel.devices.keys.filter { $0 != "lo" } ?? []
            guard devices.isEmpty else { throw SandboxError(code: .namespaceInUse, message: "\(path) has \(devices.sorted())") }
        }

        func plumb(_ sandbox: SandboxAddressing, namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError) {
            log.withLock { $0.append("plumb \(sandbox.index)") }
            if failing { throw SandboxError(code: .natFailed, message: "nftables refused") }
            namespaces.namespaces[path]?.kernel.addDevice("eth0", kind: "veth")
        }

        func tearDown(_ sandbox: SandboxAddressing) -> [String] {
            log.withLock { $0.append("tear down \(sandbox.index)") }
            return []
        }

        func handOver(_ sandbox: SandboxAddressing) throws(SandboxError) {
            log.withLock { $0.append("hand over \(sandbox.index)") }
        }

        func restoreForwarding() -> [String] {
            log.withLock { $0.append("restore forwarding") }
            return []
        }

        /// What `forwardDropChains` finds: a test sets a firewall in the sandbox's way.
        let dropChains = Mutex<[ForwardDropChain]>([])

        func forwardDropChains() -> [ForwardDropChain] { dropChains.withLock { $0 } }

        nonisolated(unsafe) var stepFault: (@Sendable (String) -> Bool)?
    }

    static func setUp(owner: UInt32 = 0, failing: Bool = false, stateDirectory: String? = nil) -> (Conditioner, FakePlumbing, FakeNamespaces) {
        let namespaces = FakeNamespaces()
        namespaces.make(at: path, interfaces: ["lo"])
        let plumbing = FakePlumbing(namespaces: namespaces, owner: owner, failing: failing)
        let conditioner = TestDaemon.conditioner(
            kernel: FakeKernel(), stateDirectory: stateDirectory, namespaces: namespaces, sandboxes: plumbing
        )
        return (conditioner, plumbing, namespaces)
    }

    @Test("A sandbox is joined to the host before its condition is built, and goes when the lease ends")
    func lifecycle() async throws {
        let (conditioner, plumbing, namespaces) = Self.setUp()
        let held = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        #expect(StatusResponse(held.status).sandbox == SandboxDocument(address: "10.254.0.2", gateway: "10.254.0.1", hostInterface: "lcsb0"))
        #expect(plumbing.calls == ["check \(Self.path)", "plumb 0"])
        let inside = try #require(namespaces.namespaces[Self.path]?.kernel)
        #expect(try TestDaemon.conditionInKernel(inside) == "Slow Net")

        _ = await conditioner.release(held.lease)
        #expect(plumbing.calls.suffix(2) == ["tear down 0", "restore forwarding"])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("A firewall that drops forwarded packets is named in the sandbox's status with how to let it through; none, no warning")
    func firewallWarning() async throws {
        let (conditioner, plumbing, namespaces) = Self.setUp()
        let docker = ForwardDropChain(family: "ip", table: "filter", chain: "FORWARD", hasDockerUserChain: true)
        plumbing.dropChains.withLock { $0 = [docker] }
        let held = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        #expect(held.status.sandboxWarnings == [docker.warning])
        #expect(try await conditioner.status(Self.id).sandboxWarnings == [docker.warning])
        _ = await conditioner.release(held.lease)

        plumbing.dropChains.withLock { $0 = [] }
        namespaces.make(at: Self.path, interfaces: ["lo"])
        let clear = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        #expect(clear.status.sandboxWarnings.isEmpty)
    }

    @Test("A sandbox whose command ended first ends with its namespace when the client lets go")
    func namespaceGoneFirst() async throws {
        let (conditioner, plumbing, namespaces) = Self.setUp()
        let held = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        namespaces.remove(at: Self.path)
        _ = await conditioner.release(held.lease)
        #expect(plumbing.calls.suffix(2) == ["tear down 0", "restore forwarding"])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
        #expect(await conditioner.history(limit: 10).contains { $0.reason == "namespace-ended" && $0.condition == "pid/4343/eth0" })
    }

    @Test("Two sandboxes at once get two numbers; a freed number is taken again")
    func numbering() async throws {
        let (conditioner, plumbing, namespaces) = Self.setUp()
        namespaces.make(at: "/proc/4444/ns/net", interfaces: ["lo"])
        let other = ConditionID(interface: "eth0", namespace: .process(4444))
        let first = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        let second = try await conditioner.hold("Nasty Net", on: other, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        #expect(second.status.sandbox?.sandboxAddressText == "10.254.0.6")
        _ = await conditioner.release(first.lease)
        #expect(!plumbing.calls.contains("restore forwarding"), "the other sandbox still needs forwarding")
        namespaces.make(at: "/proc/4545/ns/net", interfaces: ["lo"])
        let third = try await conditioner.hold(
            "Slow Net", on: ConditionID(interface: "eth0", namespace: .process(4545)), by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in }
        )
        #expect(third.status.sandbox?.hostInterface == "lcsb0")
    }

    @Test("Another user's process is refused (403) before anything is made")
    func notYours() async throws {
        let (conditioner, plumbing, _) = Self.setUp(owner: 0)
        do {
            _ = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.alice, maximum: nil, sandbox: true, onEnd: { _ in })
            Issue.record("plumbed another user's namespace")
        } catch let refusal {
            let error = try #require(refusal.reason as? SandboxError)
            #expect(error.code == .notYours)
            #expect(error.errorCode.httpStatus == .forbidden)
        }
        #expect(plumbing.calls.isEmpty)
    }

    @Test("A process that exits while its sandbox is asked for is refused: its PID may be another's by then")
    func exitedMeanwhile() async throws {
        let (conditioner, plumbing, _) = Self.setUp(owner: TestDaemon.alice.uid)
        plumbing.running.withLock { $0 = false }
        do {
            _ = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.alice, maximum: nil, sandbox: true, onEnd: { _ in })
            Issue.record("plumbed the namespace of a process that had exited")
        } catch let refusal {
            let error = try #require(refusal.reason as? SandboxError)
            #expect(error.code == .notYours)
            #expect(error.message.contains("exited"))
        }
        #expect(plumbing.calls.isEmpty)
        #expect(await conditioner.conditionList().count == 1)
    }

    @Test("The daemon's own pin of a process: its owner, running until it exits, then not")
    func kernelPin() throws {
        let plumbing = KernelSandboxPlumbing(uplinks: { [] }, ledger: nil)
        let own = try #require(plumbing.pin(process: getpid()))
        #expect(own.owner == getuid())
        #expect(own.isRunning)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["2"]
        try child.run()
        let pinned = try #require(plumbing.pin(process: child.processIdentifier))
        #expect(pinned.isRunning)
        child.waitUntilExit()
        #expect(!pinned.isRunning, "exited and reaped: the pin no longer runs, whoever has its PID now")
    }

    @Test("A namespace with devices is refused as in use (409), the daemon's own included, before anything is made")
    func inUse() async throws {
        let (conditioner, plumbing, namespaces) = Self.setUp()
        namespaces.alias("/proc/77/ns/net", to: "/proc/self/ns/net", making: true)
        namespaces.make(at: "/proc/78/ns/net", interfaces: ["lo", "d0"])
        for pid: Int32 in [77, 78] {
            do {
                _ = try await conditioner.hold(
                    "Slow Net", on: ConditionID(interface: "eth0", namespace: .process(pid)), by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in }
                )
                Issue.record("plumbed the namespace of \(pid), which is in use")
            } catch let refusal {
                let error = try #require(refusal.reason as? SandboxError)
                #expect(error.code == .namespaceInUse)
                #expect(error.errorCode.httpStatus == .conflict)
            }
        }
        #expect(!plumbing.calls.contains { $0.hasPrefix("plumb") })
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("Plumbing that fails leaves no condition and no state file")
    func failedPlumbing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-sandbox-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (conditioner, plumbing, _) = Self.setUp(failing: true, stateDirectory: directory)
        await expectRefusal(SandboxError.self) {
            _ = try await conditioner.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        }
        #expect(plumbing.calls == ["check \(Self.path)", "plumb 0", "tear down 0", "restore forwarding"])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
        #expect(StateStore.storedConditions(in: directory).isEmpty)
    }

    @Test("A restarted daemon removes a sandbox an earlier one left, even while its namespace lives")
    func restart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-sandbox-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (first, _, namespaces) = Self.setUp(stateDirectory: directory)
        _ = try await first.hold("Slow Net", on: Self.id, by: TestDaemon.root, maximum: nil, sandbox: true, onEnd: { _ in })
        #expect(StateStore.storedConditions(in: directory) == [Self.id])

        let plumbing = FakePlumbing(namespaces: namespaces)
        let second = TestDaemon.conditioner(kernel: FakeKernel(), stateDirectory: directory, namespaces: namespaces, sandboxes: plumbing)
        try await second.recover()
        #expect(plumbing.calls.first == "tear down 0" && plumbing.calls.last == "restore forwarding")
        #expect(!StateStore.storedConditions(in: directory).contains(Self.id))
        let inside = try #require(namespaces.namespaces[Self.path]?.kernel)
        #expect(try TestDaemon.conditionInKernel(inside) == nil, "the tree inside the namespace is removed too")
    }
}
