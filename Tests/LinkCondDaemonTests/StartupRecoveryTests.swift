@testable import Conditions
import Shaping
import Testing

@Suite("What start-up says it did with a condition's tree")
struct StartupRecoveryTests {
    @Test("Said once per tree for leftovers, only for a condition that wants a profile otherwise")
    func startupDetail() {
        typealias Recovery = KernelConvergence.Recovery
        #expect(Recovery.nothingToDo.startupDetail(wholeInterface: true, wanted: false) == nil)
        #expect(Recovery.removedLeftovers.startupDetail(wholeInterface: true, wanted: false) == "removed a tree left by an earlier daemon")
        #expect(Recovery.removedLeftovers.startupDetail(wholeInterface: false, wanted: false) == nil)
        #expect(Recovery.readopted.startupDetail(wholeInterface: false, wanted: true) == "re-adopted the tree an earlier daemon left")
        #expect(Recovery.readopted.startupDetail(wholeInterface: true, wanted: false) == nil)
        #expect(Recovery.rebuilt(deviations: []).startupDetail(wholeInterface: true, wanted: true) == "built it")
        #expect(Recovery.rebuilt(deviations: ["no root qdisc"]).startupDetail(wholeInterface: true, wanted: true) == "rebuilt it: the tree left was incomplete")
        #expect(Recovery.rebuilt(deviations: ["no root qdisc"]).startupDetail(wholeInterface: true, wanted: false) == nil)
    }
}
