import Glibc
import Logging
import Netlink
import Profiles
@testable import Shaping
import ShapingTestSupport
import Testing

@Suite("Applying, switching and removing against a model kernel")
struct EngineTests {
    let kernel = FakeKernel(interfaces: ["eth0"])
    var engine: ShapingEngine { ShapingEngine(kernel: kernel, logger: .quiet) }

    @Test("Applying then removing leaves the interface exactly as it was")
    func applyAndRemove() throws {
        let before = kernel.fullState
        try engine.apply(Fixtures.plan(Fixtures.slowNet))
        #expect(kernel.qdisc(ReservedHandles.root, on: "eth0") != nil)
        #expect(kernel.qdisc(.ingress, on: "eth0") != nil)
        #expect(kernel.devices["lc-eth0"]?.kind == "ifb")
        #expect(try engine.survey(Fixtures.target).isComplete(for: Fixtures.plan(Fixtures.slowNet)))
        try engine.remove(Fixtures.target)
        #expect(kernel.fullState == before)
    }

    @Test("Switching changes values in place: no object is deleted or added")
    func switchInPlace() throws {
        try engine.apply(Fixtures.plan(Fixtures.slowNet))
        let stepsBefore = kernel.executed.count
        try engine.change(from: Fixtures.plan(Fixtures.slowNet), to: Fixtures.plan(Fixtures.nastyNet))
        let switchSteps = kernel.executed[stepsBefore...]
        #expect(!switchSteps.isEmpty)
        #expect(switchSteps.allSatisfy { step in
            switch step {
            case .changeClass, .changeQdisc: return true
            default: return false
            }
        })
        guard case .netem(let netem)? = kernel.qdisc(ReservedHandles.bulkLeaf, on: "lc-eth0")?.settings else {
            Issue.record("no downlink netem")
            return
        }
        #expect(netem.loss == LossRate(percent: 90))
        #expect(netem.delay == .zero)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth0")?.rate == Planner.lineRate)
    }

    @Test("A foreign root qdisc is refused and left untouched")
    func foreignRootRefused() throws {
        kernel.addForeignQdisc(on: "eth0", parent: .root, handle: TrafficControlHandle(major: 1), kind: "htb")
        let before = kernel.fullState
        let error = #expect(throws: ShapingError.self) { try engine.apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.code == .foreignQdisc)
        #expect(error?.message.contains("did not create") == true)
        #expect(kernel.fullState == before)
    }

    @Test("A foreign ingress qdisc is refused too")
    func foreignIngressRefused() throws {
        kernel.addForeignQdisc(on: "eth0", parent: .ingressParent, handle: .ingress, kind: "clsact")
        let before = kernel.fullState
        let error = #expect(throws: ShapingError.self) { try engine.apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.code == .foreignQdisc)
        #expect(kernel.fullState == before)
    }

    @Test("Asked to, the engine replaces a foreign root; removing then leaves the default")
    func foreignRootReplaced() throws {
        let pristine = kernel.fullState
        kernel.addForeignQdisc(on: "eth0", parent: .root, handle: TrafficControlHandle(major: 1), kind: "htb")
        try engine.apply(Fixtures.plan(Fixtures.slowNet), replacingForeign: true)
        #expect(kernel.qdisc(ReservedHandles.root, on: "eth0")?.kind == "htb")
        try engine.remove(Fixtures.target)
        #expect(kernel.fullState == pristine)
    }

    @Test("A device of another kind with the IFB's name is refused")
    func ifbNameTaken() {
        kernel.addDevice("lc-eth0", kind: "veth")
        let error = #expect(throws: ShapingError.self) { try engine.apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.code == .ifbNameTaken)
        #expect(kernel.devices["lc-eth0"]?.kind == "veth")
    }

    @Test("A missing interface is named")
    func missingInterface() {
        kernel.removeDevice("eth0")
        let error = #expect(throws: ShapingError.self) { try engine.apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.code == .interfaceMissing)
        #expect(error?.message.contains("eth0") == true)
    }

    @Test("Leftovers of an earlier run are removed before building")
    func leftoversRemoved() throws {
        try engine.apply(Fixtures.plan(Fixtures.nastyNet))
        // A restarted daemon does not know the tree is there.
        try engine.apply(Fixtures.plan(Fixtures.slowNet))
        guard case .netem(let netem)? = kernel.qdisc(ReservedHandles.bulkLeaf, on: "eth0")?.settings else {
            Issue.record("no uplink netem")
            return
        }
        #expect(netem.delay == .milliseconds(100))
    }

    @Test("Removing when nothing is there succeeds and touches nothing")
    func removeNothing() throws {
        let before = kernel.fullState
        try engine.remove(Fixtures.target)
        #expect(kernel.fullState == before)
        #expect(kernel.executed.isEmpty)
    }

    @Test("Removing never deletes a foreign ingress qdisc")
    func removeKeepsForeignIngress() throws {
        kernel.addForeignQdisc(on: "eth0", parent: .ingressParent, handle: .ingress, kind: "ingress")
        let before = kernel.fullState
        try engine.remove(Fixtures.target)
        #expect(kernel.fullState == before)
    }
}

@Suite("Rollback: a failure at any step restores the previous condition")
struct RollbackTests {
    static let buildStepCount = Fixtures.plan(Fixtures.slowNet).buildSteps.count
    static let switchStepCount = Fixtures.plan(Fixtures.slowNet).changeSteps(to: Fixtures.plan(Fixtures.jittery))!.count

    @Test("A build that fails at any step leaves nothing behind", arguments: 0..<buildStepCount)
    func buildFailsAt(step failing: Int) throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let before = kernel.fullState
        kernel.refusal = { step, index in index == failing ? FakeKernel.error(EINVAL, step, message: "injected") : nil }
        let error = #expect(throws: ShapingError.self) { try ShapingEngine(kernel: kernel, logger: .quiet).apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.rollbackFailures == [])
        #expect(error?.failedStep == Fixtures.plan(Fixtures.slowNet).buildSteps[failing].action)
        #expect(error?.message.contains("injected") == true)
        #expect(kernel.fullState == before)
    }

    /// Whether the kernel refuses a step before it takes effect, or after it took part of it, as
    /// netem's change does when it refuses a duplicating netem beside another.
    enum Refusal: CaseIterable, Sendable {
        case before, afterEffect
    }

    @Test(
        "A switch that fails at any step restores the old values, also when the kernel took part of the refused change",
        arguments: 0..<switchStepCount, Refusal.allCases
    )
    func switchFailsAt(step failing: Int, refusal: Refusal) throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let engine = ShapingEngine(kernel: kernel, logger: .quiet)
        try engine.apply(Fixtures.plan(Fixtures.slowNet))
        let before = kernel.fullState
        let offset = kernel.executed.count
        let refuse: @Sendable (TrafficStep, Int) -> NetlinkError? = { step, index in index == offset + failing ? FakeKernel.error(EINVAL, step) : nil }
        switch refusal {
        case .before: kernel.refusal = refuse
        case .afterEffect: kernel.refusalAfterEffect = refuse
        }
        let error = #expect(throws: ShapingError.self) {
            try engine.change(from: Fixtures.plan(Fixtures.slowNet), to: Fixtures.plan(Fixtures.jittery))
        }
        #expect(error?.rollbackFailures == [])
        #expect(kernel.fullState == before)
    }

    @Test("When an undo fails too, the error says so")
    func undoFails() {
        let kernel = FakeKernel(interfaces: ["eth0"])
        kernel.refusal = { step, _ in
            switch step {
            case .addFilter(_, let node) where node.parent == .ingress: return FakeKernel.error(EINVAL, step)
            case .deleteLink: return FakeKernel.error(EBUSY, step)
            default: return nil
            }
        }
        let error = #expect(throws: ShapingError.self) { try ShapingEngine(kernel: kernel, logger: .quiet).apply(Fixtures.plan(Fixtures.slowNet)) }
        #expect(error?.rollbackFailures.count == 1)
        #expect(error?.description.contains("rolling back also failed") == true)
    }
}

@Suite("Refusals explained")
struct RefusalTests {
    static let netemLeaf = QdiscNode(
        parent: ReservedHandles.bulkClass, handle: ReservedHandles.bulkLeaf,
        settings: .netem(NetemSettings(delay: .zero, jitter: .zero, loss: .none, limitPackets: 1000))
    )

    @Test("An unknown qdisc kind names the missing module")
    func missingNetem() {
        let step = TrafficStep.addQdisc(device: "eth0", Self.netemLeaf)
        let error = ShapingError(step: step, refusal: FakeKernel.error(ENOENT, step, message: "Specified qdisc kind is unknown"))
        #expect(error.code == .missingKernelModule)
        #expect(error.message.contains("sch_netem"))
    }

    @Test("An unknown link kind names ifb")
    func missingIFB() {
        let step = TrafficStep.createIFB(name: "lc-eth0")
        let error = ShapingError(step: step, refusal: FakeKernel.error(EOPNOTSUPP, step))
        #expect(error.code == .missingKernelModule)
        #expect(error.message.contains("lacks ifb"))
    }

    @Test("An unknown classifier or action names cls_u32 or act_mirred")
    func missingFilterModules() throws {
        let redirect = try #require(Fixtures.plan(Fixtures.slowNet).ingressRedirects.first)
        let step = TrafficStep.addFilter(device: "eth0", redirect)
        #expect(ShapingError(step: step, refusal: FakeKernel.error(ENOENT, step, message: "TC classifier not found")).message.contains("cls_u32"))
        #expect(ShapingError(step: step, refusal: FakeKernel.error(ENOENT, step, message: "Failed to load TC action module")).message.contains("act_mirred"))
        let classify = try #require(Fixtures.plan(Fixtures.slowNet).uplink.filters.first)
        let flowerStep = TrafficStep.addFilter(device: "eth0", classify)
        #expect(ShapingError(step: flowerStep, refusal: FakeKernel.error(ENOENT, flowerStep, message: "TC classifier not found")).message.contains("cls_flower"))
    }

    @Test("EPERM says root or CAP_NET_ADMIN")
    func notPermitted() {
        let step = TrafficStep.createIFB(name: "lc-eth0")
        let error = ShapingError(step: step, refusal: FakeKernel.error(EPERM, step))
        #expect(error.code == .notPermitted)
        #expect(error.message.contains("CAP_NET_ADMIN"))
    }

    @Test("Other refusals name the object, the operation and the kernel's reason")
    func otherRefusal() {
        let step = TrafficStep.addQdisc(device: "eth0", Self.netemLeaf)
        let error = ShapingError(step: step, refusal: FakeKernel.error(EINVAL, step, message: "bad limit"))
        #expect(error.code == .kernelRefused)
        #expect(error.message.contains("netem 7a10:"))
        #expect(error.message.contains("eth0"))
        #expect(error.message.contains("bad limit"))
    }
}

@Suite("Who owns what on the interface")
struct SurveyTests {
    func survey(root: QdiscInfo? = nil, ingress: QdiscInfo? = nil, ingressFilters: [FilterInfo] = [], ifb: LinkInfo? = nil) -> KernelSurvey {
        var survey = KernelSurvey(target: Fixtures.target, interface: LinkInfo(index: 2, name: "eth0", kind: nil, isUp: true, mtu: 1500), ifb: ifb)
        survey.qdiscs = [root, ingress].compactMap { $0 }
        survey.ingressFilters = ingressFilters
        return survey
    }

    func qdisc(_ kind: String, _ handle: TrafficControlHandle, parent: TrafficControlHandle) -> QdiscInfo {
        QdiscInfo(interfaceIndex: 2, handle: handle, parent: parent, kind: kind, netem: nil)
    }

    let ourIFB = LinkInfo(index: 9, name: "lc-eth0", kind: "ifb", isUp: true, mtu: 1500)

    @Test("The kernel's default root (handle 0:) is nobody's")
    func defaultRoot() {
        #expect(survey(root: qdisc("fq_codel", .unspecified, parent: .root)).root == .absent)
        #expect(survey(root: qdisc("mq", .unspecified, parent: .root)).root == .absent)
    }

    @Test("Root htb 7a00: is ours; any other handle is foreign")
    func roots() {
        #expect(survey(root: qdisc("htb", ReservedHandles.root, parent: .root)).root == .ours)
        #expect(survey(root: qdisc("netem", ReservedHandles.root, parent: .root)).root != .ours)
        #expect(survey(root: qdisc("htb", TrafficControlHandle(major: 1), parent: .root)).root != .ours)
    }

    @Test("An ingress qdisc is ours only when all its filters redirect to our IFB")
    func ingress() {
        let redirect = FilterInfo(parent: .ingress, priority: 1, protocolType: .ipv4, handle: 0x8000_0800, kind: "u32", classID: nil, redirectInterfaceIndex: 9)
        let table = FilterInfo(parent: .ingress, priority: 1, protocolType: .ipv4, handle: 0x8000_0000, kind: "u32", classID: nil, redirectInterfaceIndex: nil)
        let ingress = qdisc("ingress", .ingress, parent: .ingressParent)
        #expect(survey(ingress: ingress, ingressFilters: [table, redirect], ifb: ourIFB).ingress == .ours)
        let elsewhere = FilterInfo(parent: .ingress, priority: 1, protocolType: .ipv4, handle: 0x8000_0801, kind: "u32", classID: nil, redirectInterfaceIndex: 4)
        #expect(survey(ingress: ingress, ingressFilters: [redirect, elsewhere], ifb: ourIFB).ingress != .ours)
        #expect(survey(ingress: ingress, ingressFilters: [redirect]).ingress != .ours)
        #expect(survey(ingress: qdisc("clsact", .ingress, parent: .ingressParent), ifb: ourIFB).ingress != .ours)
    }

    @Test("An empty ingress qdisc is ours only next to both our root and our IFB")
    func emptyIngress() {
        let ingress = qdisc("ingress", .ingress, parent: .ingressParent)
        #expect(survey(ingress: ingress).ingress != .ours)
        #expect(survey(ingress: ingress, ifb: ourIFB).ingress != .ours)
        #expect(survey(root: qdisc("htb", ReservedHandles.root, parent: .root), ingress: ingress, ifb: ourIFB).ingress == .ours)
    }

    @Test("A tree is complete only when every object and filter of the plan is there, and nothing else")
    func completeness() throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let engine = ShapingEngine(kernel: kernel, logger: .quiet)
        let plan = Fixtures.plan(Fixtures.slowNet)
        try engine.apply(plan)
        let full = try kernel.survey(Fixtures.target)
        #expect(full.isComplete(for: plan))
        #expect(full.deviations(from: plan).isEmpty)
        #expect(!full.isComplete(for: Planner(exemptions: Exemptions(ports: [])).plan(Fixtures.slowNet, on: Fixtures.target)),
                "a tree built with other exemptions is not the plan's")

        for dropped in ReservedHandles.IngressPriority.redirects.map(\.priority) {
            var partial = full
            partial.ingressFilters.removeAll { $0.priority == dropped }
            #expect(!partial.isComplete(for: plan), "an ingress without its prio \(dropped) redirect is incomplete")
            #expect(partial.deviations(from: plan).contains { $0.hasPrefix("- filter") && $0.contains("redirect") })
        }
        var noUplinkFilter = full
        noUplinkFilter.rootFilters.removeLast()
        #expect(!noUplinkFilter.isComplete(for: plan))
        var noDownlinkClass = full
        noDownlinkClass.ifbClasses.removeLast()
        #expect(!noDownlinkClass.isComplete(for: plan))
        var extraFilter = full
        extraFilter.rootFilters.append(full.rootFilters[0])
        #expect(extraFilter.deviations(from: plan).contains { $0.hasPrefix("+ filter") })
    }

    @Test("Teardown steps cover exactly what is ours")
    func teardown() {
        let foreignIngress = survey(root: qdisc("htb", ReservedHandles.root, parent: .root), ingress: qdisc("ingress", .ingress, parent: .ingressParent))
        #expect(foreignIngress.teardownSteps == [.deleteQdisc(device: "eth0", parent: .root, handle: ReservedHandles.root)])
    }
}
