import ControlAPI
import Foundation
import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import NIOCore
import NIOPosix
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("The condition state")
struct ConditionerTests {
    @Test("Switching keeps the tree and moves 'since' only when the profile changes")
    func switching() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let first = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let again = try await conditioner.activate("slow-net", by: TestDaemon.root)
        #expect(again.since == first.since)
        let nasty = try await conditioner.activate("Nasty Net", by: TestDaemon.root)
        #expect(nasty.profile?.name == "Nasty Net")
        #expect(kernel.executed.filter { if case .createIFB = $0 { return true }; return false }.count == 1)
    }

    @Test("A failed switch leaves the previous condition in force")
    func failedSwitch() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let before = kernel.fullState
        kernel.refusal = { step, _ in
            if case .changeQdisc = step { return FakeKernel.error(EINVAL, step) }
            return nil
        }
        await expectRefusal(ShapingError.self) { try await conditioner.activate("Nasty Net", by: TestDaemon.root) }
        #expect(await conditioner.status().profile?.name == "Slow Net")
        #expect(kernel.fullState == before)
    }

    @Test("A forced take-over that the kernel refuses leaves the old lease and its expiry in force")
    func failedTakeOverKeepsExpiry() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, time: time)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 500))
        kernel.refusal = { step, _ in
            if case .changeQdisc = step { return FakeKernel.error(EINVAL, step) }
            return nil
        }
        await expectRefusal(ShapingError.self) {
            try await conditioner.activate("Slow Net", by: TestDaemon.root, for: LeaseDuration(milliseconds: 60_000), force: true)
        }
        #expect(await conditioner.status().lease?.holder.uid == 1000)
        kernel.refusal = nil
        await time.advance(by: .milliseconds(499))
        #expect(await conditioner.status().lease?.holder.uid == 1000)
        await time.advance(by: .milliseconds(2))
        #expect(await eventually { await conditioner.status().lease == nil })
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
    }

    @Test("A tree deleted behind the daemon's back is rebuilt on the next switch")
    func selfHealing() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        // Someone runs `tc qdisc del dev eth0 root`.
        try kernel.execute(.deleteQdisc(device: "eth0", parent: .root, handle: ReservedHandles.root))
        let status = try await conditioner.activate("Nasty Net", by: TestDaemon.root)
        #expect(status.profile?.name == "Nasty Net")
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
    }

    @Test("Leftovers of a daemon that died without state are removed at start")
    func leftovers() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        _ = try await TestDaemon.conditioner(kernel: kernel).activate("Slow Net", by: TestDaemon.root)
        try await TestDaemon.conditioner(kernel: kernel).recover()
        #expect(kernel.fullState == pristine)
    }
}

@Suite("Leases")
struct LeaseTests {
    @Test("A timed lease reverts to the baseline by itself")
    func timedLeaseExpires() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, time: time)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let leased = try await conditioner.activate("Nasty Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 300))
        #expect(leased.lease?.restores == "Slow Net")
        #expect(leased.lease?.secondsLeft == 1)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
        await time.advance(by: .milliseconds(299))
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
        await time.advance(by: .milliseconds(2))
        #expect(await eventually { await conditioner.status().lease == nil })
        let after = await conditioner.status()
        #expect(after.profile?.name == "Slow Net")
        #expect(after.lease == nil)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
        let reasons = await conditioner.history(limit: 10).map(\.reason)
        #expect(reasons == ["activate", "lease", "lease-expired"])
    }

    @Test("A lease from off reverts to off and removes the tree")
    func leaseFromOff() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, time: time)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root, for: LeaseDuration(milliseconds: 200))
        await time.advance(by: .milliseconds(199))
        #expect(kernel.fullState != pristine)
        await time.advance(by: .milliseconds(2))
        #expect(await eventually { kernel.fullState == pristine })
    }

    @Test("A client-bound lease ends when its client releases it")
    func boundLease() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let held = try await conditioner.hold("Nasty Net", by: TestDaemon.alice, maximum: nil, onEnd: { _ in })
        #expect(held.status.lease?.clientBound == true)
        #expect(held.status.lease?.expires == nil)
        let restored = await conditioner.release(held.lease)
        #expect(restored?.isActive == false)
        #expect(await conditioner.release(held.lease) == nil)
        #expect(try TestDaemon.conditionInKernel(kernel) == nil)
    }

    @Test("Taking over a client-bound lease tells its client who did")
    func takeOver() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]))
        let events = EventBox()
        _ = try await conditioner.hold("Nasty Net", by: TestDaemon.alice, maximum: nil, onEnd: { event in events.add(event) })
        await expectRefusal(LeaseConflictError.self) { try await conditioner.activate("Slow Net", by: TestDaemon.root) }
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root, force: true)
        let event = try #require(events.all.first)
        guard case .takenOver(let by) = event.reason else {
            Issue.record("ended by \(event.reason), not by a take-over")
            return
        }
        #expect(by.uid == 0)
        #expect(event.condition.profile?.name == "Slow Net")
    }

    @Test("A client-bound lease with a maximum expires and says so")
    func boundLeaseMaximum() async throws {
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), time: time)
        let events = EventBox()
        _ = try await conditioner.hold("Nasty Net", by: TestDaemon.alice, maximum: LeaseDuration(milliseconds: 200), onEnd: { events.add($0) })
        await time.advance(by: .milliseconds(199))
        #expect(events.all.isEmpty)
        await time.advance(by: .milliseconds(2))
        #expect(await eventually { !events.all.isEmpty })
        #expect(events.all.map(\.reason) == [.expired])
        #expect(await conditioner.status().isActive == false)
    }

    @Test("Shutdown ends a client-bound lease and removes everything")
    func shutdown() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let events = EventBox()
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        _ = try await conditioner.hold("Nasty Net", by: TestDaemon.alice, maximum: nil, onEnd: { events.add($0) })
        try await conditioner.shutdown()
        #expect(events.all.map(\.reason) == [.shutdown])
        #expect(events.all.first?.condition.isActive == false)
        #expect(kernel.fullState == pristine)
        let last = try #require(await conditioner.history(limit: 1).last)
        #expect(last.reason == "shutdown")
        #expect(last.detail?.contains("ended the lease on 'Nasty Net' held by uid 1000") == true)
        // The connection's end comes after the shutdown: it finds nothing to release, and
        // records nothing more.
        #expect(await conditioner.release(LeaseTicket(condition: ConditionID(interface: "eth0"), leaseID: 1)) == nil)
        #expect(await conditioner.history(limit: 1).last?.reason == "shutdown")
        await expectRefusal(DaemonStoppingError.self) { try await conditioner.activate("Slow Net", by: TestDaemon.root) }
    }

    @Test("The holder ends their own lease early and gets the baseline back; others may not")
    func releaseOwnLease() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 60_000))
        await expectRefusal(NoLeaseError.self) { try await conditioner.releaseLease(by: TestDaemon.bob) }
        let conflict = await expectRefusal(LeaseConflictError.self) { try await conditioner.activate("Slow Net", by: TestDaemon.alice) }
        #expect(conflict?.heldByRequester == true)
        #expect(conflict?.description.contains("releasing it") == true)
        let status = try await conditioner.releaseLease(by: TestDaemon.alice)
        #expect(status.profile?.name == "Slow Net")
        #expect(status.lease == nil)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
        await expectRefusal(NoLeaseError.self) { try await conditioner.releaseLease(by: TestDaemon.alice) }
    }
}

/// Collects lease events from `onEnd` callbacks.
final class EventBox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LeaseEnd] = []

    func add(_ event: LeaseEnd) { lock.withLock { events.append(event) } }
    var all: [LeaseEnd] { lock.withLock { events } }
}

@Suite("Recovery after the daemon died")
struct RecoveryTests {
    @Test("A baseline survives a restart: the tree is re-adopted, not rebuilt")
    func readopt() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path).activate("Slow Net", by: TestDaemon.root)
        let stepsBefore = kernel.executed.count
        let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(await restarted.status().profile?.name == "Slow Net")
        let recoverySteps = kernel.executed[stepsBefore...]
        // Values rewritten in place (classes, leaves, and flower filters replaced by handle); nothing added or deleted.
        #expect(recoverySteps.allSatisfy { step in
            switch step {
            case .changeClass, .changeQdisc, .replaceFilter: return true
            default: return false
            }
        })
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
    }

    @Test("A valid timed lease survives a restart and still expires")
    func leaseSurvives() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        // The first daemon's timers are on a loop of its own that never runs again, as a killed
        // process's; both daemons read the same clock.
        let doomed = ManualTime()
        let time = ManualTime()
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path, eventLoop: doomed.loop, clock: time.clock)
            .activate("Nasty Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 12_000))
        // The restart comes 5 s later.
        await time.advance(by: .seconds(5))
        let restarted = TestDaemon.conditioner(kernel: kernel, time: time, stateDirectory: directory.path)
        try await restarted.recover()
        let status = await restarted.status()
        #expect(status.lease?.holder.uid == 1000)
        #expect(status.lease?.secondsLeft == 7)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
        await time.advance(by: .milliseconds(6_999))
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
        await time.advance(by: .milliseconds(2))
        // The whole state at once: a tree read object by object while the expiry takes it down
        // matches no profile.
        #expect(await eventually { kernel.fullState == pristine })
    }

    @Test("An expired lease is not restored; the baseline is")
    func expiredLease() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let doomed = ManualTime()
        let time = ManualTime()
        let first = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path, eventLoop: doomed.loop, clock: time.clock)
        _ = try await first.activate("Slow Net", by: TestDaemon.root)
        _ = try await first.activate("Nasty Net", by: TestDaemon.alice, for: LeaseDuration(milliseconds: 100))
        // The daemon dies before the lease ends; the new one starts after it would have.
        time.advanceClock(by: .milliseconds(100))
        let restarted = TestDaemon.conditioner(kernel: kernel, time: time, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(await restarted.status().profile?.name == "Slow Net")
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
    }

    @Test("A client-bound lease does not outlive its daemon")
    func boundLeaseDropped() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
            .hold("Nasty Net", by: TestDaemon.alice, maximum: nil, onEnd: { _ in })
        let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(await restarted.status().isActive == false)
        #expect(try TestDaemon.conditionInKernel(kernel) == nil)
    }

    @Test("A clean shutdown forgets the state")
    func shutdownForgets() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        try await conditioner.shutdown()
        #expect(StateStore(directory: directory.path, condition: ConditionID(interface: "eth0")).load() == nil)
    }

    @Test("A daemon killed at any step of a build, switch or teardown is followed by a consistent one",
          arguments: CrashScenario.all)
    func crashAtEveryStep(scenario: CrashScenario) async throws {
        // Count the steps the change itself takes, then crash at each of them.
        let counting = FakeKernel(interfaces: ["eth0"])
        let countingConditioner = TestDaemon.conditioner(kernel: counting)
        try await scenario.prepare(countingConditioner)
        let before = counting.executed.count
        try await scenario.change(countingConditioner)
        let changeSteps = counting.executed.count - before
        #expect(changeSteps > 0)

        for crashStep in 0...changeSteps {
            let runtime = try TestDaemon.temporaryDirectory()
            let snapshot = try TestDaemon.temporaryDirectory()
            defer {
                try? FileManager.default.removeItem(at: runtime)
                try? FileManager.default.removeItem(at: snapshot)
            }
            let kernel = FakeKernel(interfaces: ["eth0"])
            let crashing = CrashingKernel(wrapping: kernel, stateFile: StateStore(directory: runtime.path, condition: ConditionID(interface: "eth0")).url, snapshot: snapshot)
            let dying = Conditioner(
                engine: ShapingEngine(kernel: crashing, logger: .quiet), target: ShapingTarget(interface: "eth0"), planner: Planner(),
                catalog: ProfileCatalog(entries: TestDaemon.profiles), eventLoop: MultiThreadedEventLoopGroup.singleton.next(),
                stateDirectory: runtime.path, logger: .quiet
            )
            try await scenario.prepare(dying)
            crashing.crash(afterSteps: crashStep)
            _ = try? await scenario.change(dying)
            crashing.crashNowIfStillAlive()

            let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: snapshot.path)
            try await restarted.recover()
            let found = try TestDaemon.conditionInKernel(kernel)
            #expect(scenario.acceptable.contains(found), "crash after \(crashStep) steps of \(scenario): kernel has \(found ?? "nothing")")
            #expect(await restarted.status().profile?.name == found)
            #expect(kernel.devices.keys.sorted() == (found == nil ? ["eth0"] : ["eth0", "lc-eth0"]))
        }
    }
}

/// A change of condition during which the daemon may die.
struct CrashScenario: Sendable, CustomStringConvertible {
    var description: String
    var from: String?
    var to: String?

    /// Where the kernel may be after a restart: old, new, or (for a build) nothing yet.
    var acceptable: [String?] { [from, to] }

    static let all = [
        CrashScenario(description: "build", from: nil, to: "Slow Net"),
        CrashScenario(description: "switch", from: "Slow Net", to: "Nasty Net"),
        CrashScenario(description: "teardown", from: "Nasty Net", to: nil),
    ]

    func prepare(_ conditioner: Conditioner) async throws {
        if let from { _ = try await conditioner.activate(.named(from), by: TestDaemon.root) }
    }

    func change(_ conditioner: Conditioner) async throws {
        if let to {
            _ = try await conditioner.activate(.named(to), by: TestDaemon.root)
        } else {
            _ = try await conditioner.deactivate(by: TestDaemon.root)
        }
    }
}

/// Stands for a daemon that is killed: after a number of steps, it snapshots the state file as
/// the dead daemon left it and refuses every later step, rollback included, so the model kernel
/// keeps exactly what the dead daemon had done.
final class CrashingKernel: TrafficControlKernel, @unchecked Sendable {
    private let wrapped: FakeKernel
    private let stateFile: URL
    private let snapshot: URL
    private let lock = NSLock()
    private var remaining: Int?
    private var dead = false

    init(wrapping wrapped: FakeKernel, stateFile: URL, snapshot: URL) {
        self.wrapped = wrapped
        self.stateFile = stateFile
        self.snapshot = snapshot
    }

    func crash(afterSteps steps: Int) {
        lock.withLock { remaining = steps }
    }

    /// For a change that finished before reaching the crash step: the daemon dies right after.
    func crashNowIfStillAlive() {
        lock.withLock { if !dead { die() } }
    }

    private func die() {
        dead = true
        let target = snapshot.appendingPathComponent(stateFile.lastPathComponent)
        try? FileManager.default.removeItem(at: target)
        try? FileManager.default.copyItem(at: stateFile, to: target)
    }

    func execute(_ step: TrafficStep) throws(NetlinkError) {
        let refuse: Bool = lock.withLock {
            if dead { return true }
            if let left = remaining {
                if left == 0 {
                    die()
                    return true
                }
                remaining = left - 1
            }
            return false
        }
        if refuse {
            throw NetlinkError(code: .other, operation: "\(step)", reason: "the daemon is dead")
        }
        try wrapped.execute(step)
    }

    func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
        try wrapped.survey(target)
    }
}

@Suite("Reload and history")
struct ReloadTests {
    func write(_ text: String, to file: URL) throws {
        try text.write(to: file, atomically: true, encoding: .utf8)
    }

    @Test("Reload applies the active profile's new values in place and skips a broken file")
    func reload() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let slow = directory.appendingPathComponent("slow.yaml")
        try write("name: Slow\ndownlink: { bandwidth: 32kbit, delay: 100ms }\n", to: slow)
        try write("name: Other\nuplink: { loss: 5% }\n", to: directory.appendingPathComponent("other.yaml"))
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(
            kernel: kernel, catalog: ProfileCatalog.load(from: [directory.path]), profileDirectories: [directory.path]
        )
        _ = try await conditioner.activate("Slow", by: TestDaemon.root)

        try write("name: Broken\ndownlink: { loss: 120% }\n", to: directory.appendingPathComponent("broken.yaml"))
        let unchanged = await conditioner.reload()
        #expect(unchanged.reapplied == false)
        #expect(unchanged.problems.map(\.field) == ["downlink.loss"])
        #expect(unchanged.profiles == 2)

        try write("name: Slow\ndownlink: { bandwidth: 32kbit, delay: 250ms }\n", to: slow)
        let changed = await conditioner.reload(by: TestDaemon.alice)
        #expect(changed.reapplied)
        #expect(changed.condition.profile?.downlink.delay.description == "250ms")
        let logged = await conditioner.history(limit: 1).last
        #expect(logged?.reason == "reload")
        #expect(logged?.requester?.uid == TestDaemon.alice.uid)
        #expect(logged?.requester?.command == "pytest -k offline")
        guard case .netem(let netem)? = kernel.qdisc(ReservedHandles.bulkLeaf, on: "lc-eth0")?.settings else {
            Issue.record("no downlink netem")
            return
        }
        #expect(netem.delay == .milliseconds(250))
        #expect(kernel.executed.filter { if case .createIFB = $0 { return true }; return false }.count == 1)
    }

    @Test("A profile whose file broke keeps its values")
    func brokenActiveProfile() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let slow = directory.appendingPathComponent("slow.yaml")
        try write("name: Slow\ndownlink: { delay: 100ms }\n", to: slow)
        let conditioner = TestDaemon.conditioner(
            kernel: FakeKernel(interfaces: ["eth0"]), catalog: ProfileCatalog.load(from: [directory.path]), profileDirectories: [directory.path]
        )
        _ = try await conditioner.activate("Slow", by: TestDaemon.root)
        try write("name: Slow\ndownlink: { delay: 100 }\n", to: slow)
        let reload = await conditioner.reload()
        #expect(reload.reapplied == false)
        #expect(reload.condition.profile?.downlink.delay.description == "100ms")
    }

    @Test("History names who changed what and survives a restart")
    func history() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("history.jsonl").path
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), historyFile: file)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.alice)
        _ = try await conditioner.deactivate(by: TestDaemon.root)
        let entries = await TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]), historyFile: file).history(limit: 10)
        #expect(entries.map(\.reason) == ["activate", "off"])
        #expect(entries[0].from == "off")
        #expect(entries[0].to == "Slow Net")
        #expect(entries[0].requester?.command == "pytest -k offline")
        #expect(entries[1].requester?.uid == 0)
    }
}
