import Glibc
@testable import LinkCondDaemon
import Shaping
import ShapingTestSupport
import Testing

@Suite("The condition state")
struct ConditionerTests {
    @Test("Switching keeps the tree and moves 'since' only when the profile changes")
    func switching() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let first = try await conditioner.activate("Slow Net")
        let again = try await conditioner.activate("slow-net")
        #expect(again.since == first.since)
        let created = kernel.executed.filter { if case .createIFB = $0 { return true }; return false }
        let nasty = try await conditioner.activate("Nasty Net")
        #expect(nasty.profile?.name == "Nasty Net")
        #expect(kernel.executed.filter { if case .createIFB = $0 { return true }; return false } == created)
    }

    @Test("A failed switch leaves the previous condition in force")
    func failedSwitch() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net")
        let before = kernel.fullState
        kernel.refusal = { step, _ in
            if case .changeQdisc = step { return FakeKernel.error(EINVAL, step) }
            return nil
        }
        await #expect(throws: ShapingError.self) { try await conditioner.activate("Nasty Net") }
        #expect(await conditioner.status().profile?.name == "Slow Net")
        #expect(kernel.fullState == before)
    }

    @Test("A tree deleted behind the daemon's back is rebuilt on the next switch")
    func selfHealing() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net")
        // Someone runs `tc qdisc del dev eth0 root`.
        try kernel.execute(.deleteQdisc(device: "eth0", parent: .root, handle: ReservedHandles.root))
        let status = try await conditioner.activate("Nasty Net")
        #expect(status.profile?.name == "Nasty Net")
        #expect(try ShapingEngine(kernel: kernel, logger: .quiet).survey(ShapingTarget(interface: "eth0")).isCompleteTree)
    }

    @Test("Leftovers of a daemon that died are removed at start")
    func leftovers() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        _ = try await TestDaemon.conditioner(kernel: kernel).activate("Slow Net")
        try await TestDaemon.conditioner(kernel: kernel).removeLeftovers()
        #expect(kernel.fullState == pristine)
    }
}
