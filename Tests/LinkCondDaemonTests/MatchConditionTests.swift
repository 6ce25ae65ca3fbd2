import ControlAPI
import Foundation
import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOHTTP1
import Profiles
import Shaping
import ShapingTestSupport
import Testing

extension Conditioner {
    /// The slot number of the condition `id` names, `nil` for one of the whole interface or one not held.
    func slot(of id: ConditionID) -> UInt16? {
        (try? resolved(id)).flatMap { registry[$0]?.slotNumber }
    }
}

/// Conditions on only the traffic exchanged with a peer (`eth0@10.0.0.5:443`), beside the
/// whole-interface one, sharing one tree.
@Suite("Conditions with a match on one interface")
struct MatchConditionTests {
    static let network = try! ConditionID(parsing: "eth0@10.0.0.0/8")
    static let host = try! ConditionID(parsing: "eth0@10.0.0.5:443")
    /// The same condition as `host`, on the daemon's default interface.
    static let hostOnDefault = try! ConditionID(parsing: "@10.0.0.5:443")
    static let other = try! ConditionID(parsing: "eth0@[2001:db8::1]:53/udp")

    static func profile(_ name: String) -> Profile {
        TestDaemon.profiles.first { $0.profile.name == name }!.profile
    }

    /// What building `whole` and `matches` (id, slot, profile) at once leaves in a fresh model kernel.
    static func built(whole: String?, _ matches: [(ConditionID, UInt16, String)]) throws -> [String: [String]] {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let matched = matches.map { id, slot, name in
            MatchedCondition(slot: slot, match: PeerMatch(id.peer!), profile: profile(name))
        }
        if let plan = Planner().plan(on: ShapingTarget(interface: "eth0"), whole: whole.map(profile), matches: matched) {
            try ShapingEngine(kernel: kernel, logger: .quiet).apply(plan)
        }
        return canonicalState(kernel)
    }

    /// Each device's lines, sorted: a tree changed object by object holds its filters in
    /// another order than one built at once.
    static func canonicalState(_ kernel: FakeKernel) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: kernel.devices.keys.map { device in
            (device, kernel.state(of: device).split(separator: "\n").map(String.init).sorted())
        })
    }

    /// The whole interface on Slow Net, 10/8 on Nasty Net, 10.0.0.5:443 on 100% Loss.
    static func threeConditions(kernel: FakeKernel, stateDirectory: String? = nil) async throws -> Conditioner {
        let conditioner = TestDaemon.conditioner(kernel: kernel, stateDirectory: stateDirectory)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", on: network, by: TestDaemon.root)
        _ = try await conditioner.activate("100% Loss", on: hostOnDefault, by: TestDaemon.root)
        return conditioner
    }

    @Test("Two matches and the whole interface coexist in one tree, each with its own objects")
    func coexist() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = try await Self.threeConditions(kernel: kernel)

        let list = await conditioner.conditionList()
        #expect(list.map(\.id.description) == ["eth0", "eth0@10.0.0.0/8", "eth0@10.0.0.5:443"])
        #expect(list.map { $0.profile?.name } == ["Slow Net", "Nasty Net", "100% Loss"])
        #expect(list.map { $0.id.peer?.description } == [nil, "10.0.0.0/8", "10.0.0.5:443"])
        #expect(list.map(\.isDefault) == [true, false, false])
        #expect(list.allSatisfy { $0.target.interface == "eth0" && $0.target.ifb == "lc-eth0" && $0.isActive })
        let status = try await conditioner.status(Self.hostOnDefault)
        #expect(status.id.description == "eth0@10.0.0.5:443", "@PEER is on the daemon's own interface")

        #expect(await conditioner.slot(of: Self.network) == 1)
        #expect(await conditioner.slot(of: Self.host) == 2)
        #expect(await conditioner.slot(of: ConditionID(interface: "eth0")) == nil)
        #expect(kernel.executed.filter { if case .createIFB = $0 { true } else { false } }.count == 1, "one tree, one IFB")
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") } == ["lc-eth0"])
        for device in ["eth0", "lc-eth0"] {
            for classID in [ReservedHandles.profileClass, ReservedHandles.matchClass(1), ReservedHandles.matchClass(2)] {
                #expect(kernel.htbClass(classID, on: device) != nil, "\(classID) on \(device)")
            }
            #expect(kernel.qdisc(ReservedHandles.matchLeaf(1), on: device) != nil)
            #expect(kernel.qdisc(ReservedHandles.matchLeaf(2), on: device) != nil)
        }
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: "Slow Net", [(Self.network, 1, "Nasty Net"), (Self.host, 2, "100% Loss")])))

        // A switch of one match touches only its own class, leaf and queue.
        let mark = kernel.executed.count
        _ = try await conditioner.activate("Slow Net", on: Self.host, by: TestDaemon.root)
        #expect(kernel.executed.count > mark)
        #expect(kernel.executed[mark...].allSatisfy { step in
            switch step {
            case .changeClass(_, let node): node.classID == ReservedHandles.matchClass(2)
            case .changeQdisc(_, let node): [ReservedHandles.matchLeaf(2), ReservedHandles.matchQueue(2)].contains(node.handle)
            default: false
            }
        })
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: "Slow Net", [(Self.network, 1, "Nasty Net"), (Self.host, 2, "Slow Net")])))
    }

    @Test("Switching one condition off leaves the others' objects; the last one off leaves nothing")
    func offOneByOne() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let conditioner = try await Self.threeConditions(kernel: kernel)

        var mark = kernel.executed.count
        _ = try await conditioner.deactivate(on: Self.network, by: TestDaemon.root)
        // Its filters on both devices (one each: any protocol), its queue, its leaf and its class.
        #expect(kernel.executed.count - mark == 8)
        #expect(kernel.executed[mark...].allSatisfy { step in
            switch step {
            case .deleteFilter(_, let node): node.target == .classify(ReservedHandles.matchClass(1))
            case .deleteQdisc(_, let parent, let handle):
                (parent == ReservedHandles.matchClass(1) && handle == ReservedHandles.matchLeaf(1))
                    || (parent == ReservedHandles.queueParent(of: ReservedHandles.matchLeaf(1)) && handle == ReservedHandles.matchQueue(1))
            case .deleteClass(_, let node): node.classID == ReservedHandles.matchClass(1)
            default: false
            }
        }, "only slot 1's objects go")
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0", "eth0@10.0.0.5:443"], "an off condition leaves the set")
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: "Slow Net", [(Self.host, 2, "100% Loss")])))

        // The whole interface off: the match keeps shaping, with its own class and leaf.
        mark = kernel.executed.count
        _ = try await conditioner.deactivate(by: TestDaemon.root)
        #expect(!kernel.executed[mark...].contains { if case .deleteLink = $0 { true } else { false } })
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: nil, [(Self.host, 2, "100% Loss")])))
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth0") == nil)
        #expect(kernel.htbClass(ReservedHandles.matchClass(2), on: "lc-eth0") != nil)
        #expect(try await conditioner.status(Self.host).profile?.name == "100% Loss")
        #expect(await conditioner.status().isActive == false)

        // The last condition off: the tree goes.
        _ = try await conditioner.deactivate(on: Self.host, by: TestDaemon.root)
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") }.isEmpty)
        #expect(kernel.fullState == pristine)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("A peer that matches exactly packets another condition matches is refused, nothing changed")
    func overlapRefused() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = try await Self.threeConditions(kernel: kernel)
        let before = kernel.fullState
        for text in ["eth0@10.0.0.5:443/tcp", "@10.0.0.5:443/udp"] {
            await expectRefusal(OverlappingPeerError.self) {
                try await conditioner.activate("Slow Net", on: try ConditionID(parsing: text), by: TestDaemon.root)
            }
        }
        #expect(kernel.fullState == before)
        // More specific, or of another transport or port: its own condition.
        _ = try await conditioner.activate("Slow Net", on: try ConditionID(parsing: "eth0@10.0.0.5:444/udp"), by: TestDaemon.root)
        _ = try await conditioner.activate("Slow Net", on: try ConditionID(parsing: "eth0@10.0.0.5"), by: TestDaemon.root)
    }

    @Test("off --all leaves no lc- device and the interface as it was")
    func offAll() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let conditioner = try await Self.threeConditions(kernel: kernel)
        let list = try await conditioner.deactivateAll(by: TestDaemon.root)
        #expect(list.map(\.id.description) == ["eth0"])
        #expect(list.allSatisfy { !$0.isActive })
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") }.isEmpty)
        #expect(kernel.devices["eth0"]?.qdiscs.map(\.kind) == ["noqueue"])
        #expect(kernel.fullState == pristine)
    }

    @Test("A freed slot is taken by the next match; a match's slot outlives a switch")
    func slots() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = try await Self.threeConditions(kernel: kernel)
        _ = try await conditioner.deactivate(on: Self.network, by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", on: Self.other, by: TestDaemon.root)
        #expect(await conditioner.slot(of: Self.other) == 1)
        _ = try await conditioner.activate("Slow Net", on: Self.host, by: TestDaemon.root)
        #expect(await conditioner.slot(of: Self.host) == 2)
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: "Slow Net", [(Self.other, 1, "Nasty Net"), (Self.host, 2, "Slow Net")])))
    }

    @Test("A restarted daemon re-adopts a tree with two matches, each condition in its own slot")
    func restart() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let first = try await Self.threeConditions(kernel: kernel, stateDirectory: directory.path)
        // Slots 2 and 3, not the 1 and 2 a restarted daemon would hand out afresh.
        _ = try await first.activate("Slow Net", on: Self.other, by: TestDaemon.root)
        _ = try await first.deactivate(on: Self.network, by: TestDaemon.root)
        #expect(await first.slot(of: Self.host) == 2)
        #expect(await first.slot(of: Self.other) == 3)
        #expect(StateStore(directory: directory.path, condition: Self.host).load()?.slot == 2)
        #expect(StateStore(directory: directory.path, condition: Self.other).load()?.slot == 3)
        #expect(StateStore(directory: directory.path, condition: ConditionID(interface: "eth0")).load()?.slot == nil)
        let before = Self.canonicalState(kernel)

        // The first daemon dies without a word; the next one finds the files and the tree.
        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        let mark = kernel.executed.count
        try await second.recover()
        #expect(kernel.executed.count > mark)
        #expect(kernel.changedInPlace(since: mark), "re-adopted, not rebuilt")
        #expect(Self.canonicalState(kernel) == before)
        #expect(await second.slot(of: Self.host) == 2)
        #expect(await second.slot(of: Self.other) == 3)

        let list = await second.conditionList()
        #expect(list.map(\.id.description) == ["eth0", "eth0@10.0.0.5:443", "eth0@[2001:db8::1]:53/udp"])
        #expect(list.map { $0.profile?.name } == ["Slow Net", "100% Loss", "Slow Net"])
        let startup = await second.history(limit: 10).filter { $0.reason == "startup" }
        #expect(Set(startup.compactMap(\.condition)) == ["eth0", "eth0@10.0.0.5:443", "eth0@[2001:db8::1]:53/udp"])
        #expect(startup.allSatisfy { $0.detail?.contains("re-adopted") == true })

        // The restarted daemon changes one match in place, as the first would have.
        let switchMark = kernel.executed.count
        _ = try await second.activate("Nasty Net", on: Self.other, by: TestDaemon.root)
        #expect(kernel.executed.count > switchMark)
        #expect(kernel.executed[switchMark...].allSatisfy { step in
            switch step {
            case .changeClass(_, let node): node.classID == ReservedHandles.matchClass(3)
            case .changeQdisc(_, let node): [ReservedHandles.matchLeaf(3), ReservedHandles.matchQueue(3)].contains(node.handle)
            default: false
            }
        })

        try await second.shutdown()
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") }.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("A condition id with a peer survives the path of a request", arguments: [
        "eth0@10.0.0.5:443", "netns/ci/eth0@10.0.0.0/8", "pid/42/eth0@[::1]:8080/tcp", "@10.0.0.5",
    ])
    func route(text: String) throws {
        let id = try ConditionID(parsing: text)
        let status = ControlRequest(method: .GET, uri: APIPath.condition(text), body: [], requester: TestDaemon.root)
        #expect(try APICall.parse(status) == .status(id, verbose: false))
        let release = ControlRequest(method: .DELETE, uri: APIPath.conditionLease(text), body: [], requester: TestDaemon.root)
        #expect(try APICall.parse(release) == .releaseLease(id))
    }

    @Test("PUT /v1/conditions/@PEER shapes that peer on the daemon's interface")
    func putThroughTheRouter() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let router = ControlRouter(conditioner: conditioner, authorizer: TestDaemon.authorizer)
        let reply = await router.respond(to: ControlRequest(
            method: .PUT, uri: APIPath.condition("@10.0.0.5:443"), body: Array(#"{"profile": "Nasty Net"}"#.utf8), requester: TestDaemon.root
        ))
        #expect(reply.status == .ok)
        let status = try JSONDecoder().decode(StatusResponse.self, from: Data(reply.body))
        #expect(status.id == "eth0@10.0.0.5:443")
        #expect(status.peer == "10.0.0.5:443")
        #expect(status.profile?.name == "Nasty Net")
        #expect(kernel.htbClass(ReservedHandles.matchClass(1), on: "eth0") != nil)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth0") == nil)

        let bad = await router.respond(to: ControlRequest(
            method: .PUT, uri: APIPath.condition("eth0@bad_name"), body: Array(#"{"profile": "Nasty Net"}"#.utf8), requester: TestDaemon.root
        ))
        #expect(bad.status == .badRequest)
    }

    @Test("A timed lease on a match ends with its objects, and the condition leaves the set")
    func leaseOnAMatch() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let status = try await conditioner.activate("Nasty Net", on: Self.host, by: TestDaemon.alice, for: LeaseDuration(milliseconds: 300))
        #expect(status.lease?.holder.uid == TestDaemon.alice.uid)
        #expect(kernel.htbClass(ReservedHandles.matchClass(1), on: "eth0") != nil)
        try await Task.sleep(for: .milliseconds(2500))
        #expect(kernel.fullState == pristine)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("A refused addition of a match leaves the other conditions' tree and the set as they were")
    func failedAddition() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = try await Self.threeConditions(kernel: kernel)
        let before = kernel.fullState
        kernel.refusal = { step, _ in if case .addFilter = step { FakeKernel.error(EINVAL, step) } else { nil } }
        await expectRefusal(ShapingError.self) { try await conditioner.activate("Slow Net", on: Self.other, by: TestDaemon.root) }
        #expect(kernel.fullState == before)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0", "eth0@10.0.0.0/8", "eth0@10.0.0.5:443"])
        kernel.refusal = nil
        _ = try await conditioner.activate("Slow Net", on: Self.other, by: TestDaemon.root)
        #expect(await conditioner.slot(of: Self.other) == 3)
    }

    @Test("A tree deleted behind the daemon's back is rebuilt with every condition's objects at the next switch")
    func treeDeletedByHand() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = try await Self.threeConditions(kernel: kernel)
        try ShapingEngine(kernel: kernel, logger: .quiet).remove(ShapingTarget(interface: "eth0"))
        _ = try await conditioner.activate("Slow Net", on: Self.host, by: TestDaemon.root)
        #expect(Self.canonicalState(kernel) == (try Self.built(whole: "Slow Net", [(Self.network, 1, "Nasty Net"), (Self.host, 2, "Slow Net")])))
    }

    @Test("A restarted daemon re-adopts a tree of a match alone, and builds a missing one anew")
    func restartMatchAlone() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path).activate("Nasty Net", on: Self.host, by: TestDaemon.root)
        let before = Self.canonicalState(kernel)
        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await second.recover()
        #expect(Self.canonicalState(kernel) == before)
        let readopted = await second.history(limit: 10)
        #expect(readopted.map(\.condition) == ["eth0@10.0.0.5:443"])
        #expect(readopted.last?.detail?.contains("re-adopted") == true)

        try ShapingEngine(kernel: kernel, logger: .quiet).remove(ShapingTarget(interface: "eth0"))
        let third = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await third.recover()
        #expect(Self.canonicalState(kernel) == before)
        #expect(await third.slot(of: Self.host) == 1)
    }

    @Test("A match on another interface shares its tree with that interface's whole condition, in either order")
    func otherInterface() async throws {
        let kernel = FakeKernel(interfaces: ["eth0", "eth1"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let match = try ConditionID(parsing: "eth1@10.0.0.5")
        let whole = ConditionID(interface: "eth1")
        _ = try await conditioner.activate("Nasty Net", on: match, by: TestDaemon.root)
        _ = try await conditioner.activate("Slow Net", on: whole, by: TestDaemon.root)
        #expect(kernel.htbClass(ReservedHandles.matchClass(1), on: "eth1") != nil)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth1") != nil)
        _ = try await conditioner.deactivate(on: whole, by: TestDaemon.root)
        #expect(kernel.htbClass(ReservedHandles.matchClass(1), on: "eth1") != nil)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth1") == nil)
        _ = try await conditioner.deactivate(on: match, by: TestDaemon.root)
        #expect(kernel.devices["lc-eth1"] == nil)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
        _ = try await conditioner.activate("Slow Net", on: whole, by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", on: match, by: TestDaemon.root)
        #expect(kernel.htbClass(ReservedHandles.matchClass(1), on: "eth1") != nil)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "eth1") != nil)
        #expect(kernel.devices["eth0"]?.qdiscs.map(\.kind) == ["noqueue"], "eth0 untouched")
    }

    @Test("Matches in a container's namespace share its tree there and end with the namespace")
    func inANamespace() async throws {
        let host = FakeKernel(interfaces: ["eth0"])
        let namespaces = FakeNamespaces()
        let inside = namespaces.make(at: "/proc/4242/ns/net")
        let conditioner = TestDaemon.conditioner(kernel: host, namespaces: namespaces)
        _ = try await conditioner.activate("Slow Net", on: try ConditionID(parsing: "pid/4242/eth0@10.0.0.5"), by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", on: try ConditionID(parsing: "pid/4242/eth0@10.0.0.6"), by: TestDaemon.root)
        #expect(host.executed.isEmpty)
        #expect(inside.htbClass(ReservedHandles.matchClass(1), on: "eth0") != nil)
        #expect(inside.htbClass(ReservedHandles.matchClass(2), on: "lc-eth0") != nil)
        namespaces.remove(at: "/proc/4242/ns/net")
        #expect(Set(await conditioner.endConditionsInVanishedNamespaces().map(\.description)) == ["pid/4242/eth0@10.0.0.5", "pid/4242/eth0@10.0.0.6"])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }
}
