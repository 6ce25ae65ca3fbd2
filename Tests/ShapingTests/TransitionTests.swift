import Netlink
import Profiles
@testable import Shaping
import Testing

@Suite("Steps between conditions")
struct TransitionTests {
    @Test("A build creates the IFB first and switches the ingress redirect on last")
    func buildOrder() throws {
        let steps = Fixtures.plan(Fixtures.slowNet).buildSteps.map(\.action)
        #expect(steps.first == .createIFB(name: "lc-eth0"))
        let ingress = try #require(steps.firstIndex { if case .addQdisc(_, let node) = $0 { return node.settings == .ingress }; return false })
        let lastIFBStep = try #require(steps.lastIndex { step in
            switch step {
            case .addQdisc(let device, _), .addClass(let device, _), .addFilter(let device, _): return device == "lc-eth0"
            default: return false
            }
        })
        #expect(lastIFBStep < ingress)
        #expect(steps[(ingress + 1)...].allSatisfy { if case .addFilter("eth0", let node) = $0 { return node.parent == .ingress }; return false })
    }

    @Test("Within a tree, classes precede their leaves and filters come last")
    func treeOrder() {
        let steps = Fixtures.plan(Fixtures.slowNet).uplink.buildSteps(undoRoot: true).map(\.action)
        let kinds = steps.map { step -> Int in
            switch step {
            case .addQdisc(_, let node): return node.parent == .root ? 0 : 2
            case .addClass: return 1
            case .addFilter: return 3
            default: return -1
            }
        }
        #expect(kinds == kinds.sorted())
    }

    @Test("Only the top-level objects a build creates carry an undo")
    func undoOnlyTopLevel() {
        let undos = Fixtures.plan(Fixtures.slowNet).buildSteps.compactMap(\.undo)
        #expect(undos == [
            .deleteLink(name: "lc-eth0"),
            .deleteQdisc(device: "eth0", parent: .root, handle: ReservedHandles.root),
            .deleteQdisc(device: "eth0", parent: .ingressParent, handle: .ingress),
        ])
    }

    @Test("A switch changes only the values that differ and can change each back")
    func changeSteps() throws {
        let slow = Fixtures.plan(Fixtures.slowNet)
        let nasty = Fixtures.plan(Fixtures.nastyNet)
        let steps = try #require(slow.changeSteps(to: nasty))
        #expect(!steps.isEmpty)
        for step in steps {
            switch (step.action, step.undo) {
            case (.changeClass(let device, let new), .changeClass(let undoDevice, let old)?):
                #expect(device == undoDevice)
                #expect(new.classID == old.classID)
                #expect(new != old)
            case (.changeQdisc(let device, let new), .changeQdisc(let undoDevice, let old)?):
                #expect(device == undoDevice)
                #expect(new.handle == old.handle)
                #expect(new != old)
            default:
                Issue.record("unexpected step \(step.action)")
            }
        }
        #expect(try #require(slow.changeSteps(to: slow)).isEmpty)
    }

    @Test("Plans for different targets cannot be switched in place")
    func differentTargets() {
        let other = Planner().plan(Fixtures.slowNet, on: ShapingTarget(interface: "eth1"))
        #expect(Fixtures.plan(Fixtures.slowNet).changeSteps(to: other) == nil)
    }

    @Test("Teardown removes the ingress redirect before the IFB, and the egress root last")
    func teardownOrder() {
        #expect(TrafficPlan.teardownSteps(for: Fixtures.target) == [
            .deleteQdisc(device: "eth0", parent: .ingressParent, handle: .ingress),
            .deleteLink(name: "lc-eth0"),
            .deleteQdisc(device: "eth0", parent: .root, handle: ReservedHandles.root),
        ])
    }
}

@Suite("The step counts the kernel suite's crash and rollback loops rely on")
struct KernelSuiteStepCountTests {
    /// Tests/Kernel/test_crash_safety.py kills the daemon (and injects a failure) before each of
    /// these steps, and checks that it saw exactly this many: a plan that changed shape must
    /// update both, so that neither loop can quietly shrink.
    @Test("Build of Slow Net, switch to Nasty Net, teardown")
    func counts() {
        let slow = Fixtures.plan(Fixtures.slowNet)
        let nasty = Fixtures.plan(Fixtures.nastyNet)
        #expect(slow.buildSteps.count == 51)
        #expect(slow.changeSteps(to: nasty)?.count == 11)
        #expect(slow.teardownSteps.count == 3)
    }
}
