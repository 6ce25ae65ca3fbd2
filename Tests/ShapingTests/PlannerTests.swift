import Netlink
import Profiles
@testable import Shaping
import Testing

@Suite("Planning the tc tree")
struct PlannerTests {
    @Test("Slow Net: 32 kbit/s and 100 ms each way, DNS queries 200 ms more on the uplink")
    func slowNet() throws {
        let plan = Fixtures.plan(Fixtures.slowNet)
        let up = try #require(plan.uplink.netem(ReservedHandles.bulkLeaf))
        let dns = try #require(plan.uplink.netem(ReservedHandles.dnsLeaf))
        let down = try #require(plan.downlink.netem(ReservedHandles.bulkLeaf))
        #expect(up.delay == .milliseconds(100))
        #expect(dns.delay == .milliseconds(300))
        #expect(down.delay == .milliseconds(100))
        #expect(plan.uplink.htbClass(ReservedHandles.profileClass)?.rate == .kbit(32))
        #expect(plan.downlink.htbClass(ReservedHandles.profileClass)?.rate == .kbit(32))
    }

    @Test("The DNS and bulk classes share the uplink's rate without exceeding it")
    func dnsSharesTheUplink() throws {
        let plan = Fixtures.plan(Fixtures.slowNet)
        let bulk = try #require(plan.uplink.htbClass(ReservedHandles.bulkClass))
        let dns = try #require(plan.uplink.htbClass(ReservedHandles.dnsClass))
        #expect(bulk.rate.bitsPerSecond + dns.rate.bitsPerSecond == 32_000)
        #expect(bulk.ceil == .kbit(32))
        #expect(dns.ceil == .kbit(32))
        #expect(bulk.parent == ReservedHandles.profileClass)
        #expect(dns.parent == ReservedHandles.profileClass)
    }

    @Test("The downlink has no DNS class: the DNS delay is added once, on the query")
    func downlinkHasNoDNSClass() {
        let plan = Fixtures.plan(Fixtures.slowNet)
        #expect(plan.downlink.htbClass(ReservedHandles.dnsClass) == nil)
        #expect(plan.downlink.netem(ReservedHandles.dnsLeaf) == nil)
        #expect(!plan.downlink.filters.contains { $0.target == .classify(ReservedHandles.dnsClass) })
        #expect(plan.uplink.filters.filter { $0.target == .classify(ReservedHandles.dnsClass) }.count == 4)
    }

    @Test("An unlimited direction runs at line rate and keeps netem's default queue")
    func unlimitedDirection() throws {
        let plan = Fixtures.plan(Fixtures.blackHole)
        #expect(plan.uplink.htbClass(ReservedHandles.profileClass)?.rate == Planner.lineRate)
        let down = try #require(plan.downlink.netem(ReservedHandles.bulkLeaf))
        #expect(down.loss == .total)
        #expect(down.limitPackets == 1000)
        #expect(plan.downlink.queueLimit(below: ReservedHandles.bulkLeaf) == 1000)
        let up = try #require(plan.uplink.netem(ReservedHandles.bulkLeaf))
        #expect(up.loss == .none)
        #expect(up.delay == .zero)
    }

    @Test("Queues hold the delay line in small frames plus a bounded queue, never minutes at low rates; netem holds its queue and its delay line")
    func queueLimits() throws {
        let slowPlan = Fixtures.plan(Fixtures.slowNet)
        // 32 kbit/s x 100 ms / 64 B + 32 kbit/s x 200 ms / 1514 B = 7 packets: the floor applies.
        #expect(slowPlan.uplink.queueLimit(below: ReservedHandles.bulkLeaf) == 32)
        #expect(slowPlan.uplink.netem(ReservedHandles.bulkLeaf)?.limitPackets == Planner.netemLimitFloor)
        let ltePlan = Fixtures.plan(Fixtures.lte)
        // 50 Mbit/s x 50 ms / 64 B + 50 Mbit/s x 200 ms / 1514 B = 4882.8 + 825.6 packets.
        #expect(ltePlan.downlink.queueLimit(below: ReservedHandles.bulkLeaf) == 5709)
        // And netem holds its delay line's 4882.8 on top.
        #expect(ltePlan.downlink.netem(ReservedHandles.bulkLeaf)?.limitPackets == 10592)
    }

    @Test("Every netem leaf has a queue below it, and only netem leaves do")
    func queuesBelowEachNetem() {
        let plan = Fixtures.plan(Fixtures.slowNet)
        for tree in [plan.uplink, plan.downlink] {
            let netems = tree.leaves.filter { $0.settings.kind == "netem" }.map(\.handle)
            let queued = tree.leaves.filter { $0.parent.minor == 1 && netems.contains($0.parent.qdisc) }.map(\.parent.qdisc)
            #expect(Set(netems) == Set(queued))
            #expect(netems.allSatisfy { tree.queueLimit(below: $0) != nil })
            for netem in netems {
                // Parents before children, so that a build adds netem before its queue.
                let netemIndex = tree.leaves.firstIndex { $0.handle == netem }!
                let queueIndex = tree.leaves.firstIndex { $0.parent == ReservedHandles.queueParent(of: netem) }!
                #expect(netemIndex < queueIndex)
            }
        }
        #expect(plan.uplink.leaves.count == 5)
    }

    @Test("A slow, long link holds a burst of small packets in its delay line")
    func smallPacketsInTheDelayLine() throws {
        let conditions = LinkConditions(bandwidth: .mbit(1), delay: .milliseconds(500), loss: LossRate(percent: 10))
        // 500 small datagrams a second for 500 ms: 250 in flight at once, all of which a real
        // link carries (the first version sized for 1514-byte frames held 58 and dropped 77%).
        let limits = Planner.queueLimits(conditions, extraDelay: .zero)
        #expect(limits.netem - limits.queue >= 250)
    }

    @Test("Jitter and loss reach netem; the DNS leaf gets the same jitter and loss")
    func jitterAndLoss() throws {
        let plan = Fixtures.plan(Fixtures.jittery)
        let down = try #require(plan.downlink.netem(ReservedHandles.bulkLeaf))
        #expect(down.jitter == .milliseconds(20))
        #expect(down.loss == LossRate(percent: 1))
        let dns = try #require(plan.uplink.netem(ReservedHandles.dnsLeaf))
        #expect(dns.delay == .seconds(3))
        #expect(dns.jitter == .zero)
    }

    @Test("Every profile yields the same skeleton: switching is always a change in place")
    func skeletonIsProfileIndependent() {
        let plans = Fixtures.all.map { Fixtures.plan($0) }
        for plan in plans {
            #expect(plan.hasSameSkeleton(as: plans[0]))
        }
    }

    @Test("Unshaped traffic goes to the exempt default class; catch-alls come last")
    func filterOrder() throws {
        let plan = Fixtures.plan(Fixtures.slowNet)
        guard case .htb(let defaultClass) = plan.uplink.root.settings else {
            Issue.record("root is not htb")
            return
        }
        #expect(defaultClass == ReservedHandles.exemptClass)
        let priorities = plan.uplink.filters.map(\.priority)
        #expect(priorities == priorities.sorted())
        let last = try #require(plan.uplink.filters.last)
        #expect(last.classifier == .flower(handle: 2, FlowerKey(etherType: .ipv6)))
        #expect(last.priority == ReservedHandles.Priority.all)
        #expect(last.target == .classify(ReservedHandles.bulkClass))
        for etherType in [EthernetProtocol.ipv4, .ipv6] {
            // One catch-all per IP version, evaluated after every other filter of that version.
            let ofVersion = plan.uplink.filters.filter { $0.flowerFilter?.key.etherType == etherType }
            let catchAll = ofVersion.filter { $0.flowerFilter?.key == FlowerKey(etherType: etherType) }
            #expect(catchAll.count == 1)
            let others = ofVersion.filter { $0.flowerFilter?.key != FlowerKey(etherType: etherType) }
            #expect(!others.isEmpty)
            #expect(others.allSatisfy { $0.priority < catchAll[0].priority })
        }
        // Every root filter is flower for every link-layer protocol (so VLAN-tagged frames are
        // seen), with keys the kernel honours, and one handle per priority.
        #expect(plan.uplink.filters.allSatisfy { $0.protocolType == .all && $0.flowerFilter?.key.isConsistent == true })
        let places = plan.uplink.filters.map { "\($0.priority)/\($0.flowerHandle ?? 0)" }
        #expect(Set(places).count == places.count)
    }

    @Test("Every exemption is at the exempt priority, before anything shapes")
    func exemptionsFirst() {
        let exemptions = Exemptions(ports: [Exemptions.ssh], networks: [try! IPNetwork(parsing: "10.1.0.0/16")])
        for tree in [Fixtures.plan(Fixtures.slowNet, exemptions: exemptions).uplink, Fixtures.plan(Fixtures.slowNet, exemptions: exemptions).downlink] {
            let exempt = tree.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
            // DHCP 2, neighbour discovery 2 (masked types), DHCPv6 2, SSH 4, one network 2.
            #expect(exempt.count == 12)
            #expect(exempt.allSatisfy { $0.priority == ReservedHandles.Priority.exempt })
            #expect(tree.filters.filter { $0.priority == ReservedHandles.Priority.exempt } == exempt)
            let firstShaping = tree.filters.firstIndex { $0.target != .classify(ReservedHandles.exemptClass) } ?? tree.filters.endIndex
            #expect(tree.filters[..<firstShaping].count == exempt.count)
        }
    }

    @Test("SSH is exempt both ways, as source and destination port, over IPv4 and IPv6")
    func sshExemption() {
        for tree in [Fixtures.plan(Fixtures.blackHole).uplink, Fixtures.plan(Fixtures.blackHole).downlink] {
            let exempt = tree.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
            let ssh = exempt.filter { $0.purpose.contains("tcp/22") }
            #expect(ssh.count == 4)
            #expect(ssh.allSatisfy { $0.priority == ReservedHandles.Priority.exempt && $0.protocolType == .all })
            let keys = Set(ssh.compactMap { $0.flowerFilter?.key })
            #expect(keys == [
                FlowerKey(etherType: .ipv4, ipProtocol: 6, sourcePort: 22),
                FlowerKey(etherType: .ipv4, ipProtocol: 6, destinationPort: 22),
                FlowerKey(etherType: .ipv6, ipProtocol: 6, sourcePort: 22),
                FlowerKey(etherType: .ipv6, ipProtocol: 6, destinationPort: 22),
            ])
            #expect(ssh.compactMap(\.flowerFilter).allSatisfy { $0.classID == ReservedHandles.exemptClass })
        }
    }

    @Test("Without exemptions only neighbour discovery and DHCP stay unshaped")
    func noExemptions() {
        let plan = Fixtures.plan(Fixtures.blackHole, exemptions: Exemptions())
        let exempt = plan.uplink.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
        #expect(exempt.allSatisfy { $0.purpose.contains("neighbour discovery") || $0.purpose.contains("DHCP") })
        #expect(exempt.filter { $0.purpose.contains("neighbour discovery") }.count == 2)
        #expect(exempt.filter { $0.purpose.contains("DHCP") }.count == 4)
    }

    @Test("Neighbour discovery: ICMPv6 types 133 to 137 match, echo requests do not")
    func neighbourDiscovery() throws {
        let plan = Fixtures.plan(Fixtures.blackHole)
        let nd = plan.uplink.filters.filter { $0.purpose.contains("neighbour discovery") }.compactMap(\.flowerFilter)
        #expect(nd.allSatisfy { $0.key.etherType == .ipv6 && $0.key.ipProtocol == 58 && $0.key.isConsistent })
        func matches(type: UInt8) -> Bool {
            nd.contains { filter in
                guard let icmp = filter.key.icmpv6Type else { return false }
                return type & icmp.mask == icmp.value
            }
        }
        for type: UInt8 in 133...137 {
            #expect(matches(type: type), "ICMPv6 type \(type)")
        }
        #expect(!matches(type: 128))
        #expect(!matches(type: 129))
        #expect(!matches(type: 138))
    }

    @Test("Exempt networks match source or destination with the prefix only")
    func exemptNetworks() throws {
        let exemptions = Exemptions(
            ports: [],
            networks: [try IPNetwork(parsing: "10.1.0.0/16"), try IPNetwork(parsing: "fd00:1:2::/48")]
        )
        let filters = Fixtures.plan(Fixtures.blackHole, exemptions: exemptions).uplink.filters
        let v4 = filters.filter { $0.purpose.contains("10.1.0.0/16") }.compactMap(\.flowerFilter)
        let v4Network = FlowerAddress(address: [10, 1, 0, 0], prefixLength: 16)
        #expect(v4.map(\.key) == [FlowerKey(etherType: .ipv4, source: v4Network), FlowerKey(etherType: .ipv4, destination: v4Network)])
        #expect(v4Network.mask == [0xFF, 0xFF, 0, 0])
        let v6 = filters.filter { $0.purpose.contains("fd00:1:2::/48") }.compactMap(\.flowerFilter)
        let v6Network = FlowerAddress(address: [0xFD, 0, 0, 1, 0, 2] + Array(repeating: 0, count: 10), prefixLength: 48)
        #expect(v6.map(\.key) == [FlowerKey(etherType: .ipv6, source: v6Network), FlowerKey(etherType: .ipv6, destination: v6Network)])
        #expect(v6Network.mask == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + Array(repeating: 0, count: 10))
        #expect((v4 + v6).allSatisfy { $0.priority == ReservedHandles.Priority.exempt && $0.classID == ReservedHandles.exemptClass })
    }

    @Test("Ingress redirects send IPv4, IPv6 and VLAN-tagged frames, and nothing else, to the IFB")
    func ingressRedirects() {
        let plan = Fixtures.plan(Fixtures.slowNet)
        #expect(plan.ingressRedirects.map(\.protocolType) == [.ipv4, .ipv6, .vlan, .qinq])
        #expect(plan.ingressRedirects.map(\.priority) == [1, 2, 3, 4])
        #expect(EthernetProtocol.vlan.rawValue == 0x8100 && EthernetProtocol.qinq.rawValue == 0x88A8)
        #expect(plan.ingressRedirects.allSatisfy { $0.target == .redirect(device: "lc-eth0") && $0.classifier == .u32([]) })
        #expect(plan.downlink.device == "lc-eth0")
        #expect(plan.uplink.device == "eth0")
    }

    @Test("htb buckets hold ten milliseconds of traffic and at least one full frame")
    func burst() {
        #expect(Planner.burstBytes(for: .kbit(32)) == 1600)
        #expect(Planner.burstBytes(for: .mbit(100)) == 125_000)
    }
}

@Suite("Planning a trace-driven direction")
struct TracePlanningTests {
    @Test("its leaf is sized at the trace's peak, whatever the rate of the moment, so that pacing changes the class alone")
    func leafAtPeak() throws {
        let trace = try LinkTrace(name: "two", file: "/traces/two.trace", timestamps: (1...99).map { UInt32($0) } + [200])
        #expect(trace.peakCapacity == .mbit(12))
        let profile = Profile(name: "Recorded", downlink: LinkConditions(trace: trace, delay: .milliseconds(40)))
        let target = ShapingTarget(interface: "eth0")
        let early = Planner().plan(profile.paced(at: 0).profile, on: target)
        let late = Planner().plan(profile.paced(at: 150).profile, on: target)
        let fixed = Planner().plan(Profile(name: "Fixed", downlink: LinkConditions(bandwidth: .mbit(12), delay: .milliseconds(40))), on: target)
        #expect(early.downlink.leaves == late.downlink.leaves)
        #expect(early.downlink.leaves == fixed.downlink.leaves)
        #expect(early.downlink.classes != late.downlink.classes)
        #expect(late.downlink.classes.first { $0.classID == ReservedHandles.profileClass }?.rate == LinkTrace.outageRate(lasting: 50), "one packet over the 50 ms left of the outage")
    }

    @Test("on a trace-driven uplink, neither the bulk nor the DNS class borrows: each has the trace's rate as its own")
    func nothingBorrows() throws {
        let trace = try LinkTrace(name: "two", file: "/traces/two.trace", timestamps: (1...99).map { UInt32($0) } + [200])
        let profile = Profile(name: "Recorded", uplink: LinkConditions(trace: trace, delay: .milliseconds(40)), dnsDelay: .milliseconds(100))
        let plan = Planner().plan(profile.paced(at: 150).profile, on: ShapingTarget(interface: "eth0"))
        let classes = plan.uplink.classes.filter { [ReservedHandles.profileClass, ReservedHandles.bulkClass, ReservedHandles.dnsClass].contains($0.classID) }
        #expect(classes.count == 3)
        for node in classes {
            #expect(node.rate == LinkTrace.outageRate(lasting: 50) && node.ceil == node.rate, "\(node)")
        }
    }
}
