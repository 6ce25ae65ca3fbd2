import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("Scenarios played on a condition")
struct ScenarioTests {
    static func catalog(_ scenarios: Scenario...) -> ScenarioCatalog {
        ScenarioCatalog(entries: scenarios.map { ScenarioEntry(scenario: $0, file: "/scenarios/\($0.name).yaml", stem: $0.name) })
    }

    static let timed = Scenario(name: "Timed", steps: [
        ScenarioStep(profile: .named("Slow Net"), duration: .fixed(milliseconds: 300)),
        ScenarioStep(profile: .named("Nasty Net"), duration: .fixed(milliseconds: 300)),
        ScenarioStep(profile: .named("100% Loss"), duration: .fixed(milliseconds: 300)),
    ])

    static let triggered = Scenario(name: "Triggered", steps: [
        ScenarioStep(profile: .named("Slow Net"), trigger: StepTrigger(direction: .download, unit: .bytes, threshold: 20_000)),
        ScenarioStep(profile: .named("100% Loss")),
    ])

    static let manual = Scenario(name: "Manual", steps: [
        ScenarioStep(profile: .named("Slow Net")),
        ScenarioStep(label: "Inline", profile: .inline(Profile(name: "Inline", downlink: LinkConditions(delay: .milliseconds(7))))),
    ])

    /// Pretends that the condition's downlink carried `bytes` since its objects were made.
    static func download(_ bytes: UInt64, on kernel: FakeKernel) {
        let statistics = TrafficStatistics(packets: bytes / 1000, bytes: bytes, drops: 0, overlimits: 0, queuedPackets: 0, queuedBytes: 0)
        kernel.counters = [ShapingTarget(interface: "eth0").ifb: [ReservedHandles.bulkLeaf: statistics]]
    }

    @Test("A timed scenario plays its steps in order, in place, each for its time, and its last profile stays")
    func timedSteps() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, eventLoop: time.loop, scenarios: Self.catalog(Self.timed), clock: time.clock)
        let first = try await conditioner.activate(.scenario("timed"), by: TestDaemon.root)
        #expect(first.profile?.name == "Slow Net")
        #expect(first.scenario?.step == 1)
        #expect(first.scenario?.next == "Nasty Net")
        #expect(first.scenario?.endsBy == "after 300ms")
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
        await time.advance(by: .milliseconds(299))
        #expect(await conditioner.status().scenario?.step == 1, "a step lasts its time")
        await time.advance(by: .milliseconds(1))
        #expect(await eventually { await conditioner.status().scenario?.step == 2 })
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
        await time.advance(by: .milliseconds(300))
        #expect(await eventually { await conditioner.status().scenario?.step == 3 })
        await time.advance(by: .milliseconds(300))
        #expect(await eventually { await conditioner.status().scenario?.finished == true })
        let last = await conditioner.status()
        #expect(last.profile?.name == "100% Loss")
        #expect(last.scenario?.endsBy == "nothing: the scenario is over")
        #expect(last.scenario?.timeInSteps.map(\.seconds) == [0.3, 0.3, 0.3])
        #expect(try TestDaemon.conditionInKernel(kernel) == "100% Loss")
        // One tree, changed in place at each step.
        #expect(kernel.executed.filter { if case .createIFB = $0 { return true }; return false }.count == 1)
        let entries = await conditioner.history(limit: 10)
        #expect(entries.map(\.reason) == ["play", "scenario", "scenario", "scenario-end"])
        #expect(entries.map(\.to) == ["Slow Net", "Nasty Net", "100% Loss", "100% Loss"])
    }

    @Test("A byte trigger ends its step once the direction carried that much, not before")
    func byteTrigger() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, eventLoop: time.loop, scenarios: Self.catalog(Self.triggered), clock: time.clock)
        Self.download(5_000, on: kernel)
        _ = try await conditioner.activate(.scenario("Triggered"), by: TestDaemon.root)
        Self.download(20_000, on: kernel)
        await time.advance(by: .milliseconds(100))
        #expect(await eventually { await conditioner.status().scenario?.trigger?.progress == 15_000 })
        #expect(await conditioner.status().scenario?.step == 1)
        Self.download(25_000, on: kernel)
        await time.advance(by: .milliseconds(100))
        #expect(await eventually { await conditioner.status().scenario?.step == 2 })
        #expect(await conditioner.status().profile?.name == "100% Loss")
        #expect(await conditioner.history(limit: 1).first?.detail?.contains("after 20 KB of download (20000 bytes carried)") == true)
    }

    @Test("linkcond next moves on; another change stops the scenario; next then says there is none")
    func nextAndStop() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, scenarios: Self.catalog(Self.manual))
        let first = try await conditioner.activate(.scenario("manual"), by: TestDaemon.root)
        #expect(first.scenario?.endsBy == "linkcond next")
        let second = try await conditioner.next(by: TestDaemon.root)
        #expect(second.profile?.name == "Inline")
        #expect(second.scenario?.step == 2)
        #expect(second.scenario?.endsBy == "nothing: the last step lasts until the condition changes")
        _ = try await conditioner.activate("Nasty Net", by: TestDaemon.root)
        #expect(await conditioner.status().scenario == nil)
        await expectRefusal(NoScenarioError.self) { try await conditioner.next(by: TestDaemon.root) }
    }

    @Test("Each step's time in force: the ones before, and the current one so far")
    func timeInSteps() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let time = ManualTime()
        let conditioner = TestDaemon.conditioner(kernel: kernel, scenarios: Self.catalog(Self.manual), clock: time.clock)
        let first = try await conditioner.activate(.scenario("manual"), by: TestDaemon.root)
        #expect(first.scenario?.timeInSteps.map(\.step) == [1])
        time.advanceClock(by: .milliseconds(300))
        let second = try await conditioner.next(by: TestDaemon.root)
        time.advanceClock(by: .milliseconds(100))
        let times = try #require(await conditioner.status().scenario?.timeInSteps)
        #expect(times.map(\.step) == [1, 2])
        #expect(times.map(\.name) == ["Slow Net", "Inline"])
        #expect(times[0].seconds == 0.3)
        // The first step's time stays as it was when the second began; the second's grows.
        #expect(second.scenario?.timeInSteps.first?.seconds == times[0].seconds)
        #expect(times[1].seconds == 0.1)
    }

    @Test("A scenario in a client-bound lease changes the lease's profile and ends with it")
    func inLease() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, scenarios: Self.catalog(Self.manual))
        _ = try await conditioner.activate("Nasty Net", by: TestDaemon.root)
        let (ticket, held) = try await conditioner.hold(.scenario("Manual"), by: TestDaemon.alice, maximum: nil) { _ in }
        #expect(held.profile?.name == "Slow Net")
        #expect(held.lease?.restores == "Nasty Net")
        // Someone else may not move another's scenario on; its holder may.
        await expectRefusal(LeaseConflictError.self) { try await conditioner.next(by: TestDaemon.bob) }
        let moved = try await conditioner.next(by: TestDaemon.alice)
        #expect(moved.profile?.name == "Inline")
        #expect(moved.lease != nil)
        let after = await conditioner.release(ticket)
        #expect(after?.profile?.name == "Nasty Net")
        #expect(after?.scenario == nil)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Nasty Net")
    }

    @Test("An unknown scenario is refused with suggestions and changes nothing")
    func unknown() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, scenarios: Self.catalog(Self.timed))
        await expectRefusal(UnknownScenarioError.self) { try await conditioner.activate(.scenario("Timd"), by: TestDaemon.root) }
        #expect(await conditioner.status().isActive == false)
        #expect(kernel.executed.isEmpty)
    }
}
