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
        let up = try #require(plan.uplink.netem(ReservedHandles.bulkLeaf))
        #expect(up.loss == .none)
        #expect(up.delay == .zero)
    }

    @Test("netem queues hold the delay line in small frames plus a bounded queue, never minutes at low rates")
    func queueLimits() throws {
        let slow = try #require(Fixtures.plan(Fixtures.slowNet).uplink.netem(ReservedHandles.bulkLeaf))
        // 32 kbit/s x 100 ms / 64 B + 32 kbit/s x 200 ms / 1514 B = 7 packets: the floor applies.
        #expect(slow.limitPackets == 32)
        let lte = try #require(Fixtures.plan(Fixtures.lte).downlink.netem(ReservedHandles.bulkLeaf))
        // 50 Mbit/s x 50 ms / 64 B + 50 Mbit/s x 200 ms / 1514 B = 4882.8 + 825.6 packets.
        #expect(lte.limitPackets == 5709)
    }

    @Test("A slow, long link holds a burst of small packets in its delay line")
    func smallPacketsInTheDelayLine() throws {
        let conditions = LinkConditions(bandwidth: .mbit(1), delay: .milliseconds(500), loss: LossRate(percent: 10))
        // 500 small datagrams a second for 500 ms: 250 in flight at once, all of which a real
        // link carries (the first version sized for 1514-byte frames held 58 and dropped 77%).
        #expect(Planner.queueLimit(conditions, extraDelay: .zero) >= 250)
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
        #expect(last.keys.isEmpty)
        #expect(last.protocolType == .ipv6)
        #expect(last.target == .classify(ReservedHandles.bulkClass))
        for protocolType in [EthernetProtocol.ipv4, .ipv6] {
            // One catch-all per protocol, evaluated after every other filter of that protocol.
            let ofProtocol = plan.uplink.filters.filter { $0.protocolType == protocolType }
            let catchAll = ofProtocol.filter { $0.keys.isEmpty }
            #expect(catchAll.count == 1)
            let others = ofProtocol.filter { !$0.keys.isEmpty }
            #expect(!others.isEmpty)
            #expect(others.allSatisfy { $0.priority < catchAll[0].priority })
        }
        // One protocol per priority.
        let protocolsByPriority = Dictionary(grouping: plan.uplink.filters, by: \.priority).mapValues { Set($0.map(\.protocolType)) }
        #expect(protocolsByPriority.values.allSatisfy { $0.count == 1 })
    }

    @Test("SSH is exempt both ways, as source and destination port, over IPv4 and IPv6")
    func sshExemption() {
        for tree in [Fixtures.plan(Fixtures.blackHole).uplink, Fixtures.plan(Fixtures.blackHole).downlink] {
            let exempt = tree.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
            let ssh = exempt.filter { $0.purpose.contains("tcp/22") }
            #expect(ssh.count == 4)
            #expect(ssh.contains { $0.protocolType == .ipv4 && $0.keys.contains(U32Key(offset: 20, value: 22 << 16, mask: 0xFFFF_0000)) })
            #expect(ssh.contains { $0.protocolType == .ipv4 && $0.keys.contains(U32Key(offset: 20, value: 22, mask: 0xFFFF)) })
            #expect(ssh.contains { $0.protocolType == .ipv6 && $0.keys.contains(U32Key(offset: 40, value: 22 << 16, mask: 0xFFFF_0000)) })
            #expect(ssh.contains { $0.protocolType == .ipv6 && $0.keys.contains(U32Key(offset: 40, value: 22, mask: 0xFFFF)) })
        }
    }

    @Test("Without exemptions only neighbour discovery and DHCP stay unshaped")
    func noExemptions() {
        let plan = Fixtures.plan(Fixtures.blackHole, exemptions: Exemptions())
        let exempt = plan.uplink.filters.filter { $0.target == .classify(ReservedHandles.exemptClass) }
        #expect(exempt.allSatisfy { $0.purpose.contains("neighbour discovery") || $0.purpose.contains("DHCP") })
        #expect(exempt.filter { $0.purpose.contains("neighbour discovery") }.count == 2)
    }

    @Test("Neighbour discovery: ICMPv6 types 133 to 137 match, echo requests do not")
    func neighbourDiscovery() throws {
        let plan = Fixtures.plan(Fixtures.blackHole)
        let nd = plan.uplink.filters.filter { $0.purpose.contains("neighbour discovery") }
        func matches(type: UInt8) -> Bool {
            let word = UInt32(type) << 24
            return nd.contains { filter in
                filter.keys.allSatisfy { key in
                    key.offset == 4 ? (58 << 8) & key.mask == key.value : word & key.mask == key.value
                }
            }
        }
        for type: UInt8 in 133...137 {
            #expect(matches(type: type), "ICMPv6 type \(type)")
        }
        #expect(!matches(type: 128))
        #expect(!matches(type: 129))
    }

    @Test("Exempt networks match source or destination with the prefix's words only")
    func exemptNetworks() throws {
        let exemptions = Exemptions(
            ports: [],
            networks: [try IPNetwork(parsing: "10.1.0.0/16"), try IPNetwork(parsing: "fd00:1:2::/48")]
        )
        let filters = Fixtures.plan(Fixtures.blackHole, exemptions: exemptions).uplink.filters
        let v4 = filters.filter { $0.purpose.contains("10.1.0.0/16") }
        #expect(v4.map(\.keys) == [
            [U32Key(offset: 12, value: 0x0A01_0000, mask: 0xFFFF_0000)],
            [U32Key(offset: 16, value: 0x0A01_0000, mask: 0xFFFF_0000)],
        ])
        let v6 = filters.filter { $0.purpose.contains("fd00:1:2::/48") }
        #expect(v6.count == 2)
        #expect(v6[0].keys == [
            U32Key(offset: 8, value: 0xFD00_0001, mask: .max),
            U32Key(offset: 12, value: 0x0002_0000, mask: 0xFFFF_0000),
        ])
        #expect(v6[1].keys.map(\.offset) == [24, 28])
    }

    @Test("Ingress redirects send IPv4 and IPv6, and nothing else, to the IFB")
    func ingressRedirects() {
        let plan = Fixtures.plan(Fixtures.slowNet)
        #expect(plan.ingressRedirects.map(\.protocolType) == [.ipv4, .ipv6])
        #expect(plan.ingressRedirects.allSatisfy { $0.target == .redirect(device: "lc-eth0") && $0.keys.isEmpty })
        #expect(plan.downlink.device == "lc-eth0")
        #expect(plan.uplink.device == "eth0")
    }

    @Test("htb buckets hold ten milliseconds of traffic and at least one full frame")
    func burst() {
        #expect(Planner.burstBytes(for: .kbit(32)) == 1600)
        #expect(Planner.burstBytes(for: .mbit(100)) == 125_000)
    }
}
