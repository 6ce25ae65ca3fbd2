import ControlAPI
import Foundation
import Logging
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOHTTP1
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("Conditions in other network namespaces (containers)")
struct NamespaceConditionTests {
    static let containerPath = "/proc/4242/ns/net"
    static let container = ConditionID(interface: "eth0", namespace: .process(4242))

    @Test("A condition in a container's namespace is built there, and nothing of the host's changes")
    func shapedInsideTheNamespace() async throws {
        let host = FakeKernel(interfaces: ["eth0"])
        let namespaces = FakeNamespaces()
        let inside = namespaces.make(at: Self.containerPath)
        let conditioner = TestDaemon.conditioner(kernel: host, namespaces: namespaces)

        let status = try await conditioner.activate("Slow Net", on: Self.container, by: TestDaemon.root)
        #expect(status.id.description == "pid/4242/eth0" && status.target.interface == "eth0" && status.id.namespace?.description == "pid/4242" && !status.isDefault)
        #expect(host.executed.isEmpty, "the host's eth0, which has the same name, is untouched")
        #expect(inside.devices["lc-eth0"] != nil)
        #expect(try TestDaemon.conditionInKernel(inside) == "Slow Net")

        _ = try await conditioner.deactivate(on: Self.container, by: TestDaemon.root)
        #expect(try TestDaemon.conditionInKernel(inside) == nil)
        #expect(host.executed.isEmpty)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("Without an interface, a condition in a namespace is on the interface of that namespace's default route")
    func interfaceOfTheDefaultRoute() async throws {
        let namespaces = FakeNamespaces()
        let inside = namespaces.make(at: Self.containerPath, interfaces: ["eth0", "eth1"], defaultRoute: "eth1")
        namespaces.make(at: "/run/netns/island")
        namespaces.defaultRoutes = namespaces.defaultRoutes.filter { $0.key != (try? namespaces.identity(at: "/run/netns/island")) }
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        let unnamed = ConditionID(interface: "", namespace: .process(4242))

        let status = try await conditioner.activate("Slow Net", on: unnamed, by: TestDaemon.root)
        #expect(status.id.description == "pid/4242/eth1" && status.target.interface == "eth1")
        #expect(inside.devices["lc-eth1"] != nil && inside.devices["lc-eth0"] == nil)
        #expect(await conditioner.holds(unnamed))
        #expect(try await conditioner.status(unnamed).profile?.name == "Slow Net")
        _ = try await conditioner.deactivate(on: unnamed, by: TestDaemon.root)
        #expect(try TestDaemon.conditionInKernel(inside) == nil)

        let island = ConditionID(interface: "", namespace: .named("island"))
        await expectRefusal(NoDefaultRouteInNamespaceError.self) {
            _ = try await conditioner.activate("Slow Net", on: island, by: TestDaemon.root)
        }
        #expect(NoDefaultRouteInNamespaceError(namespace: .named("island")).description.contains("no default route"))
        #expect(NoDefaultRouteInNamespaceError(namespace: .named("island")).errorCode == .unknownInterface)
        await expectRefusal(UnknownNamespaceError.self) {
            _ = try await conditioner.activate("Slow Net", on: ConditionID(interface: "", namespace: .process(999)), by: TestDaemon.root)
        }
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"], "nothing was made for the refusals")
    }

    @Test("A reader's status of `pid/PID/` where nothing is held: off, without entering the namespace to read its routes")
    func readerDoesNotEnterTheNamespace() async throws {
        let namespaces = FakeNamespaces()
        namespaces.make(at: Self.containerPath, interfaces: ["eth0", "eth1"], defaultRoute: "eth1")
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        let unnamed = ConditionID(interface: "", namespace: .process(4242))

        let off = try await conditioner.status(unnamed)
        #expect(off.profile == nil && off.id.description == "pid/4242/")
        #expect(namespaces.routeTableReads.isEmpty)
        await expectRefusal(UnknownNamespaceError.self) {
            _ = try await conditioner.status(ConditionID(interface: "", namespace: .process(999)))
        }
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"], "nothing was made for the readings")

        _ = try await conditioner.activate("Slow Net", on: unnamed, by: TestDaemon.root)
        #expect(try await conditioner.status(unnamed).profile?.name == "Slow Net", "where linkcond shapes, the route decides")
        #expect(namespaces.routeTableReads == [Self.containerPath, Self.containerPath])
    }

    @Test("The namespace watch waits, without a timer, until a condition is in another namespace, or until it is cancelled")
    func watchWaitsForANamespace() async throws {
        let namespaces = FakeNamespaces()
        namespaces.make(at: Self.containerPath)
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        let watch = Task {
            await conditioner.untilConditionsInOtherNamespaces()
            return ContinuousClock.now
        }
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        try await Task.sleep(for: .milliseconds(50))
        let namespacedAt = ContinuousClock.now
        _ = try await conditioner.activate("Slow Net", on: Self.container, by: TestDaemon.root)
        let wokenAt = await watch.value
        #expect(wokenAt >= namespacedAt, "the host's own condition is nothing to watch")
        await conditioner.untilConditionsInOtherNamespaces()  // at once while there is one

        _ = try await conditioner.deactivate(on: Self.container, by: TestDaemon.root)
        let cancelled = Task { await conditioner.untilConditionsInOtherNamespaces() }
        try await Task.sleep(for: .milliseconds(20))
        cancelled.cancel()
        await cancelled.value
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await conditioner.untilConditionsInOtherNamespaces()
        }
        await cancelledFirst.value
    }

    @Test("A namespace that does not exist is a 404 naming it, and a daemon without namespaces says so")
    func unknownNamespace() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: FakeNamespaces())
        await expectRefusal(UnknownNamespaceError.self) {
            _ = try await conditioner.activate("Slow Net", on: Self.container, by: TestDaemon.root)
        }
        let error = UnknownNamespaceError(namespace: .named("ci-1"), reason: "no such namespace")
        #expect(error.errorCode.httpStatus == .notFound)
        #expect(error.description.contains("/run/netns/ci-1") && error.description.contains("ip netns list"))

        let without = TestDaemon.conditioner(kernel: FakeKernel())
        await expectRefusal(NamespaceTargetsUnavailableError.self) {
            _ = try await without.activate("Slow Net", on: Self.container, by: TestDaemon.root)
        }
    }

    @Test("An interface the namespace lacks is a 404 that says how to list the namespace's")
    func unknownInterfaceInNamespace() async throws {
        let namespaces = FakeNamespaces()
        namespaces.make(at: "/run/netns/ci-1", interfaces: ["veth1"])
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        do {
            _ = try await conditioner.activate("Slow Net", on: ConditionID(interface: "eth0", namespace: .named("ci-1")), by: TestDaemon.root)
            Issue.record("activated on a missing interface")
        } catch let refusal {
            let error = try #require(refusal.reason as? UnknownInterfaceError)
            #expect(error.description.contains("ip -n ci-1 link"))
        }
    }

    @Test("The namespace ends: the condition ends with it, its lease client hears why, history and state say so")
    func namespaceEnds() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let namespaces = FakeNamespaces()
        namespaces.make(at: Self.containerPath)
        let conditioner = TestDaemon.conditioner(
            kernel: FakeKernel(), stateDirectory: directory.path, historyFile: directory.appendingPathComponent("history.jsonl").path,
            namespaces: namespaces
        )
        let events = EventBox()
        _ = try await conditioner.hold(.named("Slow Net"), on: Self.container, by: TestDaemon.root, maximum: nil) { events.add($0) }
        #expect(StateStore.storedConditions(in: directory.path).contains(Self.container))
        #expect(await conditioner.endConditionsInVanishedNamespaces().isEmpty, "still there: nothing ends")

        namespaces.remove(at: Self.containerPath)
        #expect(await conditioner.endConditionsInVanishedNamespaces() == [Self.container])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
        #expect(events.all.map(\.reason) == [.namespaceEnded])
        #expect(!StateStore.storedConditions(in: directory.path).contains(Self.container))
        let last = try #require(await conditioner.history(limit: 1).first)
        #expect(last.condition == "pid/4242/eth0" && last.reason == "namespace-ended" && last.from == "Slow Net" && last.to == "off")
    }

    @Test("The PID named exits while the container lives on: the condition ends, its objects removed through another process")
    func namedProcessExits() async throws {
        let namespaces = FakeNamespaces()
        namespaces.alias("/proc/4300/ns/net", to: Self.containerPath, making: true)
        let inside = try #require(namespaces.namespaces[Self.containerPath]?.kernel)
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        _ = try await conditioner.activate("Slow Net", on: Self.container, by: TestDaemon.root)
        #expect(try TestDaemon.conditionInKernel(inside) == "Slow Net")

        namespaces.remove(at: Self.containerPath)
        #expect(await conditioner.endConditionsInVanishedNamespaces() == [Self.container])
        #expect(try TestDaemon.conditionInKernel(inside) == nil, "nothing of linkcond's left in the living namespace")
        let last = try #require(await conditioner.history(limit: 1).first)
        #expect(last.reason == "namespace-ended" && (last.detail ?? "").contains("/proc/4300/ns/net"))
    }

    @Test("After the PID named exited while no daemon ran, a restart and `--cleanup` each remove the objects through another process")
    func namedProcessExitedWhileStopped() async throws {
        for finish in ["restart", "cleanup"] {
            let directory = try TestDaemon.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let namespaces = FakeNamespaces()
            namespaces.alias("/proc/4300/ns/net", to: Self.containerPath, making: true)
            let inside = try #require(namespaces.namespaces[Self.containerPath]?.kernel)
            let first = TestDaemon.conditioner(kernel: FakeKernel(), stateDirectory: directory.path, namespaces: namespaces)
            _ = try await first.activate("Nasty Net", on: Self.container, by: TestDaemon.root)
            namespaces.remove(at: Self.containerPath)

            if finish == "restart" {
                let second = TestDaemon.conditioner(kernel: FakeKernel(), stateDirectory: directory.path, namespaces: namespaces)
                try await second.recover()
                #expect(await second.conditionList().map(\.id.description) == ["eth0"])
                #expect(!StateStore.storedConditions(in: directory.path).contains(Self.container))
            } else {
                try Cleanup.run(interfaces: [], stateDirectory: directory.path, kernel: FakeKernel(), namespaces: namespaces, logger: Logger(label: "test"))
            }
            #expect(try TestDaemon.conditionInKernel(inside) == nil, "\(finish): nothing of linkcond's left in the living namespace")
        }
    }

    @Test("A name that now means another namespace is the old one gone: never shaped into the new one")
    func reusedName() async throws {
        let namespaces = FakeNamespaces()
        namespaces.make(at: "/run/netns/ci-1")
        let id = ConditionID(interface: "eth0", namespace: .named("ci-1"))
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        _ = try await conditioner.activate("Slow Net", on: id, by: TestDaemon.root)
        let newer = namespaces.make(at: "/run/netns/ci-1")
        #expect(await conditioner.endConditionsInVanishedNamespaces() == [id])
        #expect(newer.executed.isEmpty)
    }

    @Test("A restarted daemon brings a namespace's condition back while it is the same namespace, else records its end")
    func recovery() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let history = directory.appendingPathComponent("history.jsonl").path
        let namespaces = FakeNamespaces()
        let inside = namespaces.make(at: Self.containerPath)
        let other = ConditionID(interface: "eth0", namespace: .named("gone"))
        namespaces.make(at: "/run/netns/gone")
        let first = TestDaemon.conditioner(kernel: FakeKernel(), stateDirectory: directory.path, historyFile: history, namespaces: namespaces)
        _ = try await first.activate("Nasty Net", on: Self.container, by: TestDaemon.root)
        _ = try await first.activate("Slow Net", on: other, by: TestDaemon.root)
        namespaces.remove(at: "/run/netns/gone")

        let second = TestDaemon.conditioner(kernel: FakeKernel(), stateDirectory: directory.path, historyFile: history, namespaces: namespaces)
        try await second.recover()
        let list = await second.conditionList()
        #expect(list.map(\.id.description) == ["eth0", "pid/4242/eth0"])
        #expect(list.last?.profile?.name == "Nasty Net")
        #expect(try TestDaemon.conditionInKernel(inside) == "Nasty Net")
        let stored = StateStore.storedConditions(in: directory.path)
        #expect(stored.contains(Self.container) && !stored.contains(other), "the ended one's state file went")
        let entries = await second.history(limit: 5)
        #expect(entries.contains { $0.condition == "netns/gone/eth0" && $0.reason == "namespace-ended" })
    }

    @Test("State files are named by the percent-encoded id, and read back to the same ids")
    func stateFileNames() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ids = [ConditionID(interface: "eth0"), ConditionID(interface: "eth0", namespace: .named("ci-1")), Self.container]
        for id in ids {
            try StateStore(directory: directory.path, condition: id).save(PersistedState(interface: id.interface, baselineSince: Date()))
        }
        #expect(StateStore(directory: directory.path, condition: Self.container).url.lastPathComponent == "pid%2F4242%2Feth0.state.json")
        #expect(Set(StateStore.storedConditions(in: directory.path)) == Set(ids))
    }
}

@Suite("One interface, one condition, however it is named")
struct AliasedConditionTests {
    @Test("The same namespace by name and by PID, or linkcondd's own by PID, is refused with the id to use")
    func aliases() async throws {
        let namespaces = FakeNamespaces()
        namespaces.make(at: "/run/netns/ci-1")
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(), namespaces: namespaces)
        let named = ConditionID(interface: "eth0", namespace: .named("ci-1"))
        _ = try await conditioner.activate("Slow Net", on: named, by: TestDaemon.root)
        // The container's process, in that same namespace.
        namespaces.alias("/proc/77/ns/net", to: "/run/netns/ci-1")
        do {
            _ = try await conditioner.activate("Nasty Net", on: ConditionID(interface: "eth0", namespace: .process(77)), by: TestDaemon.root)
            Issue.record("a second condition on the same device")
        } catch let refusal {
            let error = try #require(refusal.reason as? AliasedConditionError)
            #expect(error.existing == named && error.errorCode.httpStatus == .conflict)
        }
        namespaces.alias(NamespaceDirectory.ownNamespacePath, to: "/proc/1/ns/net", making: true)
        await expectRefusal(AliasedConditionError.self) {
            _ = try await conditioner.activate("Nasty Net", on: ConditionID(interface: "eth0", namespace: .process(1)), by: TestDaemon.root)
        }
    }
}
