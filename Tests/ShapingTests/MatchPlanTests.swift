import Glibc
import Netlink
import Profiles
@testable import Shaping
import ShapingTestSupport
import Testing

/// Plans with conditions that match peers (`eth0@10.0.0.5:443`) beside, or instead of, the
/// whole-interface one.
@Suite("Conditions with a match")
struct MatchPlanTests {
    static func peer(_ network: String, port: UInt16? = nil, _ transports: [PortExemption.Transport] = [.tcp, .udp]) -> PeerMatch {
        let text = port.map { "\(network):\($0)" } ?? network
        return PeerMatch(networks: [try! IPNetwork(parsing: network)], port: port, transports: transports, text: text)
    }

    /// Slot 1: the whole 10/8 network, Slow Net; slot 2: one host's port 443, Nasty Net.
    static let network = MatchedCondition(slot: 1, match: peer("10.0.0.0/8"), profile: Fixtures.slowNet)
    static let host = MatchedCondition(slot: 2, match: peer("10.0.0.5", port: 443), profile: Fixtures.nastyNet)

    static func plan(whole: Profile? = nil, _ matches: [MatchedCondition]) -> TrafficPlan {
        Planner().plan(on: Fixtures.target, whole: whole, matches: matches)!
    }

    /// `k` matches, each on a host of its own with a port, all with `profile` but slot 1's.
    static func manyMatches(_ k: Int, first profile: Profile) -> [MatchedCondition] {
        (1...k).map { slot in
            MatchedCondition(
                slot: UInt16(slot), match: peer("10.0.\(slot / 256).\(slot % 256)", port: 443),
                profile: slot == 1 ? profile : Fixtures.lte
            )
        }
    }

    static func filters(of slot: UInt16, in tree: DirectionTree) -> [FilterNode] {
        tree.filters.filter { $0.target == .classify(ReservedHandles.matchClass(slot)) }
    }

    /// Each device's lines, sorted: the model kernel keeps filters in the order they were
    /// added, which a tree changed object by object and one built at once need not share.
    static func canonicalState(_ kernel: FakeKernel) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: kernel.devices.keys.map { device in
            (device, kernel.state(of: device).split(separator: "\n").map(String.init).sorted())
        })
    }

    @Test("A device behind a gateway: what leaves the interface towards it gets its downlink, what arrives its uplink")
    func device() throws {
        var match = Self.peer("192.168.50.10")
        match.isDevice = true
        let asymmetric = Profile(
            name: "Asymmetric",
            downlink: LinkConditions(bandwidth: nil, delay: .milliseconds(15)),
            uplink: LinkConditions(bandwidth: nil, delay: .milliseconds(10))
        )
        let plan = Self.plan([MatchedCondition(slot: 1, match: match, profile: asymmetric)])
        func delay(_ tree: DirectionTree) -> Delay? {
            guard case .netem(let netem) = tree.leaves.first(where: { $0.handle == ReservedHandles.matchLeaf(1) })?.settings else { return nil }
            return netem.delay
        }
        #expect(delay(plan.uplink) == .milliseconds(15))
        #expect(delay(plan.downlink) == .milliseconds(10))
        // The keys are a peer's: the device's address as destination leaving, as source arriving.
        let leaving = try #require(Self.filters(of: 1, in: plan.uplink).first?.flowerFilter)
        let arriving = try #require(Self.filters(of: 1, in: plan.downlink).first?.flowerFilter)
        #expect(leaving.key.destination?.address == [192, 168, 50, 10] && leaving.key.source == nil)
        #expect(arriving.key.source?.address == [192, 168, 50, 10] && arriving.key.destination == nil)
    }

    @Test("Without any condition there is no tree")
    func nothing() {
        #expect(Planner().plan(on: Fixtures.target, whole: nil, matches: []) == nil)
    }

    @Test("Matches alone: the exempt class and one class, leaf and queue per match, nothing of the whole interface")
    func matchesAlone() {
        let plan = Self.plan([Self.network, Self.host])
        for tree in [plan.uplink, plan.downlink] {
            #expect(tree.classes.map(\.classID) == [ReservedHandles.exemptClass, ReservedHandles.matchClass(1), ReservedHandles.matchClass(2)])
            #expect(tree.leaves.map(\.handle) == [
                ReservedHandles.exemptLeaf, ReservedHandles.matchLeaf(1), ReservedHandles.matchQueue(1), ReservedHandles.matchLeaf(2), ReservedHandles.matchQueue(2),
            ])
            #expect(tree.htbClass(ReservedHandles.profileClass) == nil, "no 7a00:3")
            #expect(tree.htbClass(ReservedHandles.bulkClass) == nil)
            #expect(tree.htbClass(ReservedHandles.dnsClass) == nil)
            #expect(!tree.filters.contains { $0.priority == ReservedHandles.Priority.dns || $0.priority == ReservedHandles.Priority.all })
            #expect(tree.leaves.filter { $0.parent == ReservedHandles.matchClass(1) }.map(\.handle) == [ReservedHandles.matchLeaf(1)])
            #expect(tree.leaves.filter { $0.parent == ReservedHandles.matchClass(2) }.map(\.handle) == [ReservedHandles.matchLeaf(2)])
            // Every other filter is an exemption.
            let exempt = tree.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
            #expect(exempt.count + Self.filters(of: 1, in: tree).count + Self.filters(of: 2, in: tree).count == tree.filters.count)
        }
        #expect(ReservedHandles.matchClass(1) == TrafficControlHandle(major: 0x7A00, minor: 0x4001))
        #expect(ReservedHandles.matchLeaf(2) == TrafficControlHandle(major: 0x4002))
        #expect(plan.uplink.htbClass(ReservedHandles.matchClass(1))?.rate == .kbit(32))
        #expect(plan.uplink.netem(ReservedHandles.matchLeaf(1))?.delay == .milliseconds(100))
        #expect(plan.downlink.netem(ReservedHandles.matchLeaf(2))?.loss == LossRate(percent: 90))
        #expect(plan.uplink.htbClass(ReservedHandles.matchClass(2))?.rate == Planner.lineRate)
    }

    @Test("Matches beside the whole interface: both keep their own objects, the matches' filters first")
    func besideWhole() {
        let plan = Self.plan(whole: Fixtures.slowNet, [Self.network, Self.host])
        let wholeAlone = Fixtures.plan(Fixtures.slowNet)
        for (tree, alone) in [(plan.uplink, wholeAlone.uplink), (plan.downlink, wholeAlone.downlink)] {
            #expect(Set(alone.classes).isSubset(of: Set(tree.classes)))
            #expect(Set(alone.leaves).isSubset(of: Set(tree.leaves)))
            #expect(Set(alone.filters).isSubset(of: Set(tree.filters)))
            let matched = Self.filters(of: 1, in: tree) + Self.filters(of: 2, in: tree)
            #expect(matched.allSatisfy { ReservedHandles.Priority.matches.contains($0.priority) })
            #expect(matched.allSatisfy { $0.priority > ReservedHandles.Priority.exempt && $0.priority < ReservedHandles.Priority.dns })
        }
    }

    @Test("The more specific match is tried first: a lower priority number")
    func specificity() throws {
        let plan = Self.plan([Self.network, Self.host])
        for tree in [plan.uplink, plan.downlink] {
            let network = Self.filters(of: 1, in: tree)
            let host = Self.filters(of: 2, in: tree)
            #expect(network.count == 1, "any protocol: one filter")
            #expect(host.count == 2, "a port alone: TCP and UDP")
            let networkPriority = try #require(Set(network.map(\.priority)).first)
            let hostPriority = try #require(Set(host.map(\.priority)).first)
            #expect(hostPriority < networkPriority)
            #expect(Set(host.map(\.priority)).count == 1)
            #expect(hostPriority == ReservedHandles.Priority.matches.lowerBound, "a full-length address with a port is the most specific")
            #expect(ReservedHandles.Priority.matches.contains(networkPriority))
            // Handles of the slot's range, so that one condition's filters are replaced and deleted alone.
            #expect(network.compactMap(\.flowerHandle) == [0x101])
            #expect(host.compactMap(\.flowerHandle) == [0x201, 0x202])
            #expect((network + host).allSatisfy { $0.protocolType == .all && $0.parent == ReservedHandles.root })
        }
        // /8 of IPv4 is as specific as /32 of IPv6; a port adds to a prefix.
        #expect(PeerMatch.specificity(of: try IPNetwork(parsing: "10.0.0.0/8"), hasPort: false)
            == PeerMatch.specificity(of: try IPNetwork(parsing: "2001:db8::/32"), hasPort: false))
        #expect(PeerMatch.specificity(of: try IPNetwork(parsing: "10.0.0.0/8"), hasPort: true)
            > PeerMatch.specificity(of: try IPNetwork(parsing: "10.0.0.0/8"), hasPort: false))
    }

    @Test("The uplink matches the peer as destination, the downlink (IFB) as source")
    func directions() throws {
        let plan = Self.plan([Self.network, Self.host])
        let hostAddress = FlowerAddress(address: [10, 0, 0, 5], prefixLength: 32)
        let networkAddress = FlowerAddress(address: [10, 0, 0, 0], prefixLength: 8)
        #expect(Set(Self.filters(of: 2, in: plan.uplink).compactMap { $0.flowerFilter?.key }) == [
            FlowerKey(etherType: .ipv4, ipProtocol: 6, destination: hostAddress, destinationPort: 443),
            FlowerKey(etherType: .ipv4, ipProtocol: 17, destination: hostAddress, destinationPort: 443),
        ])
        #expect(Set(Self.filters(of: 2, in: plan.downlink).compactMap { $0.flowerFilter?.key }) == [
            FlowerKey(etherType: .ipv4, ipProtocol: 6, source: hostAddress, sourcePort: 443),
            FlowerKey(etherType: .ipv4, ipProtocol: 17, source: hostAddress, sourcePort: 443),
        ])
        #expect(Self.filters(of: 1, in: plan.uplink).compactMap { $0.flowerFilter?.key } == [FlowerKey(etherType: .ipv4, destination: networkAddress)])
        #expect(Self.filters(of: 1, in: plan.downlink).compactMap { $0.flowerFilter?.key } == [FlowerKey(etherType: .ipv4, source: networkAddress)])
        #expect(plan.downlink.device == "lc-eth0")
        for tree in [plan.uplink, plan.downlink] {
            #expect(tree.filters.allSatisfy { $0.flowerFilter?.key.isConsistent == true })
            let flower = (Self.filters(of: 1, in: tree) + Self.filters(of: 2, in: tree)).compactMap(\.flowerFilter)
            #expect(flower.count == 3)
            #expect(flower.filter { $0.handle >> 8 == 1 }.allSatisfy { $0.classID == ReservedHandles.matchClass(1) })
            #expect(flower.filter { $0.handle >> 8 == 2 }.allSatisfy { $0.classID == ReservedHandles.matchClass(2) })
        }
    }

    @Test("Any address with a port: one filter per IP version and transport")
    func anyAddress() {
        let any = PeerMatch(networks: [.anyIPv4, .anyIPv6], port: 8080, transports: [.tcp], text: "*:8080/tcp")
        let plan = Self.plan([MatchedCondition(slot: 3, match: any, profile: Fixtures.lte)])
        let keys = Self.filters(of: 3, in: plan.uplink).compactMap { $0.flowerFilter?.key }
        #expect(keys == [
            FlowerKey(etherType: .ipv4, ipProtocol: 6, destinationPort: 8080),
            FlowerKey(etherType: .ipv6, ipProtocol: 6, destinationPort: 8080),
        ])
    }

    @Test("Switching one match's profile costs the same whatever the number of others, and touches only its slot", arguments: [1, 16, 64])
    func switchOneOfMany(k: Int) throws {
        func steps(_ k: Int) throws -> [PlannedStep] {
            let before = Self.plan(Self.manyMatches(k, first: Fixtures.slowNet))
            let after = Self.plan(Self.manyMatches(k, first: Fixtures.nastyNet))
            return try #require(before.changeSteps(to: after))
        }
        let alone = try steps(1)
        let many = try steps(k)
        #expect(!alone.isEmpty)
        #expect(many.count == alone.count)
        for step in many {
            switch (step.action, step.undo) {
            case (.changeClass(_, let node), .changeClass(_, let old)?):
                #expect(node.classID == ReservedHandles.matchClass(1))
                #expect(old.classID == node.classID && old != node)
            case (.changeQdisc(_, let node), .changeQdisc(_, let old)?):
                #expect([ReservedHandles.matchLeaf(1), ReservedHandles.matchQueue(1)].contains(node.handle))
                #expect(old.handle == node.handle && old != node)
            default:
                Issue.record("unexpected step \(step.action)")
            }
        }
        // Class, leaf and queue, on each device.
        #expect(Set(many.map(\.action.device)) == ["eth0", "lc-eth0"])
    }

    @Test("Replacing one match's profile in place gives the plan and the steps a whole new plan gives",
          arguments: [1, 16, 64])
    func replacingInPlace(k: Int) throws {
        let whole: [Profile?] = [nil, Fixtures.slowNet]
        for wholeProfile in whole {
            for (from, to) in [(Fixtures.slowNet, Fixtures.nastyNet), (Fixtures.lte, Fixtures.blackHole), (Fixtures.blackHole, Fixtures.jittery)] {
                let device = MatchedCondition(slot: UInt16(k + 1), match: Self.peer("192.168.50.10"), profile: Fixtures.lte)
                var gatewayDevice = device
                gatewayDevice.match.isDevice = true
                let before = Self.plan(whole: wholeProfile, Self.manyMatches(k, first: from) + [gatewayDevice])
                let wanted = Self.plan(whole: wholeProfile, Self.manyMatches(k, first: to) + [gatewayDevice])
                let switched = MatchedCondition(slot: 1, match: Self.manyMatches(1, first: to)[0].match, profile: to)
                let replaced = try #require(Planner().replacingProfile(of: switched, in: before))
                #expect(replaced == wanted)
                #expect(before.slotChangeSteps(1, to: replaced) == (try #require(before.changeSteps(to: wanted))))

                var device2 = gatewayDevice
                device2.profile = to
                let deviceReplaced = try #require(Planner().replacingProfile(of: device2, in: before))
                #expect(deviceReplaced == Self.plan(whole: wholeProfile, Self.manyMatches(k, first: from) + [device2]),
                        "a device's directions the other way round")
            }
        }
        let absent = MatchedCondition(slot: 999, match: Self.peer("10.9.9.9"), profile: Fixtures.slowNet)
        #expect(Planner().replacingProfile(of: absent, in: Self.plan(Self.manyMatches(k, first: Fixtures.lte))) == nil)
    }

    @Test("Adding a match adds only its class, leaf, queue and filters, each undone by its removal")
    func addMatch() throws {
        let third = MatchedCondition(slot: 3, match: Self.peer("192.0.2.0/24", port: 53, [.udp]), profile: Fixtures.lte)
        let before = Self.plan(whole: Fixtures.slowNet, [Self.network, Self.host])
        let after = Self.plan(whole: Fixtures.slowNet, [Self.network, Self.host, third])
        let steps = try #require(before.changeSteps(to: after))
        var expected: [TrafficStep] = []
        for tree in [after.uplink, after.downlink] {
            let filters = Self.filters(of: 3, in: tree)
            #expect(filters.count == 1)
            expected += [.addClass(device: tree.device, try #require(tree.htbClass(ReservedHandles.matchClass(3))))]
            expected += [.addQdisc(device: tree.device, try #require(tree.leaves.first { $0.handle == ReservedHandles.matchLeaf(3) }))]
            expected += [.addQdisc(device: tree.device, try #require(tree.leaves.first { $0.handle == ReservedHandles.matchQueue(3) }))]
            expected += filters.map { .addFilter(device: tree.device, $0) }
        }
        #expect(steps.map(\.action) == expected, "classes and leaves before the filters that lead to them")
        for step in steps {
            switch (step.action, step.undo) {
            case (.addClass(let device, let node), .deleteClass(let undoDevice, let undone)?):
                #expect(device == undoDevice && node == undone)
            case (.addQdisc, nil):
                break  // goes with its class, or its netem
            case (.addFilter(let device, let node), .deleteFilter(let undoDevice, let undone)?):
                #expect(device == undoDevice && node == undone)
            default:
                Issue.record("unexpected step \(step.action) undone by \(String(describing: step.undo))")
            }
        }
    }

    @Test("Removing a match deletes exactly its filters, then its queue, its leaf and its class")
    func removeMatch() throws {
        let before = Self.plan(whole: Fixtures.slowNet, [Self.network, Self.host])
        let after = Self.plan(whole: Fixtures.slowNet, [Self.network])
        let steps = try #require(before.changeSteps(to: after))
        var expected: [TrafficStep] = []
        for tree in [before.uplink, before.downlink] {
            let leaf = try #require(tree.leaves.first { $0.handle == ReservedHandles.matchLeaf(2) })
            let queue = try #require(tree.leaves.first { $0.handle == ReservedHandles.matchQueue(2) })
            expected += Self.filters(of: 2, in: tree).map { .deleteFilter(device: tree.device, $0) }
            expected += [.deleteQdisc(device: tree.device, parent: queue.parent, handle: queue.handle)]
            expected += [.deleteQdisc(device: tree.device, parent: leaf.parent, handle: leaf.handle)]
            expected += [.deleteClass(device: tree.device, try #require(tree.htbClass(ReservedHandles.matchClass(2))))]
        }
        #expect(steps.map(\.action) == expected)
        #expect(steps.allSatisfy { $0.undo != nil }, "each deletion can be undone")
    }

    @Test("Adding, switching and removing matches on a model kernel ends where building the result at once does", arguments: [
        "add", "switch", "remove", "first match beside the whole interface", "last match beside the whole interface",
        "whole interface beside matches", "whole interface off beside matches",
    ])
    func sameAsBuilt(change: String) throws {
        let third = MatchedCondition(slot: 3, match: Self.peer("2001:db8::/32"), profile: Fixtures.jittery)
        var switched = Self.host
        switched.profile = Fixtures.blackHole
        let (before, after): (TrafficPlan, TrafficPlan) = switch change {
        case "add": (Self.plan([Self.network, Self.host]), Self.plan([Self.network, Self.host, third]))
        case "switch": (Self.plan(whole: Fixtures.lte, [Self.network, Self.host]), Self.plan(whole: Fixtures.lte, [Self.network, switched]))
        case "remove": (Self.plan([Self.network, Self.host, third]), Self.plan([Self.network, third]))
        case "first match beside the whole interface": (Self.plan(whole: Fixtures.slowNet, []), Self.plan(whole: Fixtures.slowNet, [Self.host]))
        case "whole interface beside matches": (Self.plan([Self.network, Self.host]), Self.plan(whole: Fixtures.slowNet, [Self.network, Self.host]))
        case "whole interface off beside matches": (Self.plan(whole: Fixtures.jittery, [Self.network, Self.host]), Self.plan([Self.network, Self.host]))
        default: (Self.plan(whole: Fixtures.slowNet, [Self.host]), Self.plan(whole: Fixtures.slowNet, []))
        }
        let changed = FakeKernel(interfaces: ["eth0"])
        let engine = ShapingEngine(kernel: changed, logger: .quiet)
        try engine.apply(before)
        let stateBefore = Self.canonicalState(changed)
        let mark = changed.executed.count
        try engine.change(from: before, to: after)
        #expect(!changed.executed[mark...].contains { if case .createIFB = $0 { true } else { false } }, "changed in place, not rebuilt")

        let built = FakeKernel(interfaces: ["eth0"])
        try ShapingEngine(kernel: built, logger: .quiet).apply(after)
        #expect(Self.canonicalState(changed) == Self.canonicalState(built))
        #expect(Self.canonicalState(changed) != stateBefore)
        #expect(try changed.survey(Fixtures.target).isComplete(for: after))
    }

    @Test("A failed addition of a match leaves the tree as it was")
    func failedAddition() throws {
        let before = Self.plan([Self.network])
        let after = Self.plan([Self.network, Self.host])
        let count = try #require(before.changeSteps(to: after)).count
        for failing in 0..<count {
            let kernel = FakeKernel(interfaces: ["eth0"])
            let engine = ShapingEngine(kernel: kernel, logger: .quiet)
            try engine.apply(before)
            let state = Self.canonicalState(kernel)
            let offset = kernel.executed.count
            kernel.refusal = { step, index in index == offset + failing ? FakeKernel.error(EINVAL, step) : nil }
            let error = #expect(throws: ShapingError.self) { try engine.change(from: before, to: after) }
            #expect(error?.rollbackFailures == [], "step \(failing)")
            #expect(Self.canonicalState(kernel) == state, "step \(failing)")
        }
    }
}

extension TrafficStep {
    /// The device a step acts on.
    var device: String {
        switch self {
        case .createIFB(let name), .deleteLink(let name): return name
        case .addQdisc(let device, _), .changeQdisc(let device, _), .deleteQdisc(let device, _, _), .addClass(let device, _),
            .changeClass(let device, _), .deleteClass(let device, _), .addFilter(let device, _), .replaceFilter(let device, _),
            .deleteFilter(let device, _):
            return device
        }
    }
}
