import Foundation
@testable import Conditions
import LinkCondVocabulary
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("The registry of conditions")
struct ConditionRegistryTests {
    static func tree(_ interface: String) -> KernelConvergence {
        KernelConvergence(
            target: ShapingTarget(interface: interface), planner: Planner(),
            engine: ShapingEngine(kernel: FakeKernel(interfaces: ["eth0", "eth1"]), logger: .quiet), logger: .quiet
        )
    }

    static func condition(_ text: String, on tree: KernelConvergence, slot: UInt16? = nil) throws -> Condition {
        let id = try ConditionID(parsing: text)
        let slot = slot.map { ConditionSlot.match($0, PeerMatch(id.peer!)) } ?? .whole
        return Condition(id: id, convergence: tree, slot: slot, stateStore: nil, offSince: Date())
    }

    @Test("The default condition stays; another leaves, once, and its target's tree with the last one on it")
    func insertAndRemove() throws {
        let eth0 = Self.tree("eth0"), eth1 = Self.tree("eth1")
        var registry = ConditionRegistry(default: try Self.condition("eth0", on: eth0))
        let whole = try Self.condition("eth1", on: eth1)
        let peer = try Self.condition("eth1@10.0.0.5", on: eth1, slot: 1)
        registry.insert(peer)
        registry.insert(whole)
        #expect(registry.ordered.map(\.id.description) == ["eth0", "eth1", "eth1@10.0.0.5"])
        let defaultCondition = registry.defaultCondition
        let removedDefault = registry.remove(defaultCondition)
        #expect(!removedDefault)
        let removedWhole = registry.remove(whole)
        #expect(removedWhole)
        let removedAgain = registry.remove(whole)
        #expect(!removedAgain)
        registry.update(whole)
        #expect(registry[whole.id] == nil, "a condition no longer held stays gone")
        #expect(registry.tree(of: whole.id) === eth1, "the peer's condition still shares it")
        let removedPeer = registry.remove(peer)
        #expect(removedPeer)
        #expect(registry.tree(of: whole.id) == nil)
        #expect(registry.ordered.map(\.id.description) == ["eth0"])
    }

    @Test("A new match takes its stored slot when free, else the lowest free one; an exact overlap is found")
    func slotsAndOverlaps() throws {
        let eth0 = Self.tree("eth0")
        var registry = ConditionRegistry(default: try Self.condition("eth0", on: eth0))
        registry.insert(try Self.condition("eth0@10.0.0.5", on: eth0, slot: 1))
        registry.insert(try Self.condition("eth0@10.0.0.6", on: eth0, slot: 3))
        #expect(registry.freeSlot(on: eth0, preferring: nil) == 2)
        #expect(registry.freeSlot(on: eth0, preferring: 7) == 7)
        #expect(registry.freeSlot(on: eth0, preferring: 3) == 2)
        #expect(registry.freeSlot(on: Self.tree("eth1"), preferring: nil) == 1)
        #expect(registry.overlapping(PeerMatch(try PeerSpec(parsing: "10.0.0.6")), on: eth0)?.id.description == "eth0@10.0.0.6")
        #expect(registry.overlapping(PeerMatch(try PeerSpec(parsing: "10.0.0.7")), on: eth0) == nil)
    }
}
