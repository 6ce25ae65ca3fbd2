@testable import Conditions
import Failures
import LinkCondVocabulary
import Netlink
import Profiles
import Shaping
import ShapingTestSupport
import Synchronization
import Testing

/// Stands in for the kernel's sock_diag: records what each reset asked for, and answers with
/// `outcome` or fails with `failure`.
final class FakeResetter: ConnectionResetter, @unchecked Sendable {
    struct Call {
        var selection: ConnectionSelection
        var namespacePath: String?
    }

    private let state = Mutex<[Call]>([])
    var outcome = ResetOutcome(reset: 2)
    var failure: NetlinkError?
    var interfaceAddresses: [[UInt8]] = [[192, 0, 2, 10]]

    var calls: [Call] { state.withLock { $0 } }

    func reset(_ selection: ConnectionSelection, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> ResetOutcome {
        state.withLock { $0.append(Call(selection: selection, namespacePath: namespace?.path)) }
        if let failure { throw failure }
        return outcome
    }

    func addresses(of interface: String) -> [[UInt8]] {
        interfaceAddresses
    }

    private let handovers = Mutex<[(DeviceFlows, String?, ended: Bool)]>([])
    /// Each handover asked for and each ended, with its namespace's path, in order.
    var handoverCalls: [(DeviceFlows, String?, ended: Bool)] { handovers.withLock { $0 } }

    func handOver(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> Int {
        handovers.withLock { $0.append((handover, namespace?.path, false)) }
        if let failure { throw failure }
        return 3
    }

    func removeTable(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) {
        handovers.withLock { $0.append((handover, namespace?.path, true)) }
    }

    func removeDeviceTables(except kept: Set<String>) -> [String] { [] }
}

@Suite("Resetting a condition's connections")
struct ResetConditionTests {
    static let peer = try! ConditionID(parsing: "eth0@192.0.2.7:443")

    private func connection(local: [UInt8] = [192, 0, 2, 10], localPort: UInt16 = 40000, to remote: [UInt8], port: UInt16) -> TCPConnection {
        TCPConnection(local: .init(address: local, port: localPort), remote: .init(address: remote, port: port))
    }

    @Test("A peer's connections: those with the peer's address and port, found in the daemon's namespace; the history says how many")
    func peer() async throws {
        let resetter = FakeResetter()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), resetter: resetter)
        let report = try await conditioner.reset(on: Self.peer, by: TestDaemon.root)
        #expect(report.outcome == ResetOutcome(reset: 2))
        #expect(report.connections == "TCP connections with 192.0.2.7:443")
        let call = try #require(resetter.calls.first)
        #expect(call.namespacePath == nil)
        #expect(call.selection.takes(connection(to: [192, 0, 2, 7], port: 443)))
        #expect(!call.selection.takes(connection(to: [192, 0, 2, 7], port: 80)))
        #expect(!call.selection.takes(connection(to: [192, 0, 2, 8], port: 443)))
        let last = try #require(await conditioner.history(limit: 1).last)
        #expect(last.reason == "reset" && last.detail == "reset 2: TCP connections with 192.0.2.7:443" && last.from == "off" && last.to == "off")
        #expect(await conditioner.conditionList().count == 1, "a reset holds no condition")
    }

    @Test("The daemon's own interface: connections of its addresses, never SSH, never loopback")
    func ownInterface() async throws {
        let resetter = FakeResetter()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), resetter: resetter)
        _ = try await conditioner.reset(by: TestDaemon.root)
        let selection = try #require(resetter.calls.first?.selection)
        #expect(selection.takes(connection(to: [203, 0, 113, 9], port: 443)))
        #expect(!selection.takes(connection(to: [203, 0, 113, 9], port: 22)), "an SSH session to a server")
        #expect(!selection.takes(connection(localPort: 22, to: [203, 0, 113, 9], port: 51000)), "the SSH session that runs the test")
        #expect(!selection.takes(connection(local: [10, 0, 0, 3], to: [203, 0, 113, 9], port: 443)), "another interface's address")
    }

    @Test("A container's namespace: every connection that leaves it, found inside it")
    func namespace() async throws {
        let resetter = FakeResetter()
        let namespaces = FakeNamespaces()
        namespaces.make(at: "/proc/4242/ns/net")
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), namespaces: namespaces, resetter: resetter)
        _ = try await conditioner.reset(on: ConditionID(interface: "eth0", namespace: .process(4242)), by: TestDaemon.root)
        let call = try #require(resetter.calls.first)
        #expect(call.namespacePath == "/proc/4242/ns/net")
        #expect(call.selection.takes(connection(local: [172, 17, 0, 2], to: [203, 0, 113, 9], port: 443)))
        #expect(!call.selection.takes(connection(local: [127, 0, 0, 1], to: [127, 0, 0, 1], port: 5432)))
    }

    @Test("A held condition named by another path to its namespace (a sandbox by its command's PID): that condition's connections")
    func aliasOfAHeldCondition() async throws {
        let resetter = FakeResetter()
        let namespaces = FakeNamespaces()
        namespaces.make(at: "/proc/4242/ns/net")
        namespaces.alias("/proc/4343/ns/net", to: "/proc/4242/ns/net")
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), namespaces: namespaces, resetter: resetter)
        _ = try await conditioner.activate("Slow Net", on: ConditionID(interface: "eth0", namespace: .process(4242)), by: TestDaemon.root)
        let report = try await conditioner.reset(on: ConditionID(interface: "eth0", namespace: .process(4343)), by: TestDaemon.root)
        #expect(report.condition.id.description == "pid/4242/eth0" && report.condition.entry?.profile.name == "Slow Net")
        #expect(resetter.calls.map(\.namespacePath) == ["/proc/4242/ns/net"])
    }

    @Test("Another client's lease: refused unless forced, and nothing is reset")
    func lease() async throws {
        let resetter = FakeResetter()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), resetter: resetter)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 600_000))
        await expectRefusal(LeaseConflictError.self) { try await conditioner.reset(by: TestDaemon.bob) }
        #expect(resetter.calls.isEmpty)
        let report = try await conditioner.reset(by: TestDaemon.bob, force: true)
        #expect(report.outcome.reset == 2 && report.condition.entry?.profile.name == "Slow Net")
        #expect(await conditioner.status().lease?.holder.uid == TestDaemon.alice.uid, "the lease stays")
    }

    @Test("A gateway device's reset takes its connections through this machine, in the device's namespace; the history says how many")
    func device() async throws {
        let resetter = FakeResetter()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), resetter: resetter)
        let report = try await conditioner.reset(on: ConditionID(parsing: "eth0@device=192.168.50.10"), by: TestDaemon.root)
        #expect(report.outcome.reset == 2 && report.connections == "TCP connections the device makes through this machine")
        guard case .forwardedFor(let device) = try #require(resetter.calls.first).selection.scope else {
            Issue.record("not the device's forwarded connections: \(resetter.calls)")
            return
        }
        #expect(device.addresses == [[192, 168, 50, 10]] && device.interface == "eth0")
        #expect(await conditioner.history(limit: 10).last?.detail == "reset 2: TCP connections the device makes through this machine")
    }

    @Test("A host name nobody looked up, a kernel that cannot, no resetter: each refused with its reason")
    func refusals() async throws {
        let resetter = FakeResetter()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), resetter: resetter)
        let name = try await expectRefusal(ResetError.self) { try await conditioner.reset(on: ConditionID(parsing: "eth0@api.example.com:443"), by: TestDaemon.root) }
        #expect(name?.errorCode == .badRequest)
        #expect(resetter.calls.isEmpty)

        resetter.failure = NetlinkError(code: .unsupported, operation: "destroy", errno: 95, reason: "this kernel cannot destroy sockets")
        let kernel = await expectRefusal(ResetError.self) { try await conditioner.reset(on: Self.peer, by: TestDaemon.root) }
        #expect(kernel?.errorCode == .resetUnavailable && kernel?.description.contains("cannot destroy sockets") == true)
        resetter.failure = NetlinkError(code: .notPermitted, operation: "destroy", errno: 1, reason: "Operation not permitted")
        #expect(await expectRefusal(ResetError.self) { try await conditioner.reset(on: Self.peer, by: TestDaemon.root) }?.errorCode == .notPermitted)
        #expect(await conditioner.history(limit: 10).allSatisfy { $0.reason != "reset" }, "a refused reset is not recorded")

        let without = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]))
        #expect(await expectRefusal(ResetError.self) { try await without.reset(by: TestDaemon.root) }?.errorCode == .resetUnavailable)
    }

    @Test("A scenario step with reset: true resets the condition's connections as it begins, and only that step")
    func scenarioStep() async throws {
        let resetter = FakeResetter()
        let scenario = Scenario(name: "Handover", steps: [
            ScenarioStep(profile: .named("Slow Net")),
            ScenarioStep(label: "Reclaimed", profile: .named("100% Loss"), resetsConnections: true),
            ScenarioStep(profile: .named("Nasty Net")),
        ])
        let conditioner = TestDaemon.conditioner(
            kernel: FakeKernel(interfaces: ["eth0"]), scenarios: ScenarioTests.catalog(scenario), resetter: resetter
        )
        _ = try await conditioner.activate(.scenario("Handover"), by: TestDaemon.root)
        #expect(resetter.calls.isEmpty, "the first step does not reset")
        _ = try await conditioner.next(by: TestDaemon.root)
        #expect(resetter.calls.count == 1)
        let resets = await conditioner.history(limit: 10).filter { $0.reason == "reset" }
        #expect(resets.map(\.detail) == ["reset 2: TCP connections of the interface's addresses, as step 'Reclaimed' began"])
        _ = try await conditioner.next(by: TestDaemon.root)
        #expect(resetter.calls.count == 1, "the next step does not reset")

        resetter.failure = NetlinkError(code: .unsupported, operation: "destroy", errno: 95, reason: "cannot")
        let first = Scenario(name: "Reset first", steps: [ScenarioStep(profile: .named("Slow Net"), resetsConnections: true)])
        let failing = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), scenarios: ScenarioTests.catalog(first), resetter: resetter)
        let status = try await failing.activate(.scenario("Reset first"), by: TestDaemon.root)
        #expect(status.profile?.name == "Slow Net" && status.scenario != nil, "a step that cannot reset still plays")
        #expect(await failing.history(limit: 10).last?.detail?.hasPrefix("step 'Slow Net' could not reset connections") == true)
    }

    @Test("A handover step on a gateway device's condition hands the device's flows over (its address, behind its interface); its NAT goes with the condition; another condition's step only records that it cannot")
    func deviceHandover() async throws {
        let resetter = FakeResetter()
        let scenario = Scenario(name: "To LTE", steps: [
            ScenarioStep(profile: .named("Slow Net")),
            ScenarioStep(label: "LTE", profile: .named("Nasty Net"), handsOver: true),
        ])
        let conditioner = TestDaemon.conditioner(
            kernel: FakeKernel(interfaces: ["eth0"]), scenarios: ScenarioTests.catalog(scenario), resetter: resetter
        )
        let device = try ConditionID(parsing: "eth0@device=192.168.50.10")
        _ = try await conditioner.activate(.scenario("To LTE"), on: device, by: TestDaemon.root)
        #expect(resetter.handoverCalls.isEmpty, "the first step does not hand over")
        _ = try await conditioner.next(on: device, by: TestDaemon.root)
        let handover = try #require(resetter.handoverCalls.first?.0)
        #expect(handover.addresses == [[192, 168, 50, 10]] && handover.interface == "eth0")
        #expect(handover.table.hasPrefix(DeviceFlows.tablePrefix) && resetter.handoverCalls.map(\.ended) == [false])
        let recorded = await conditioner.history(limit: 10).filter { $0.reason == "handover" }.map(\.detail)
        #expect(recorded == ["step 'LTE': the device's flows continue from a new address and port (3 tracked flow(s) moved; an untracked one moves with its next packet)"])
        _ = try await conditioner.deactivate(on: device, by: TestDaemon.root)
        #expect(resetter.handoverCalls.map(\.ended) == [false, true] && resetter.handoverCalls.last?.0 == handover)

        // The machine's own interface: its sockets are not linkcond's to map.
        _ = try await conditioner.activate(.scenario("To LTE"), by: TestDaemon.root)
        _ = try await conditioner.next(by: TestDaemon.root)
        #expect(resetter.handoverCalls.count == 2)
        #expect(await conditioner.history(limit: 10).last?.detail?.contains("this machine's own sockets, not linkcond's to map") == true)
    }
}
