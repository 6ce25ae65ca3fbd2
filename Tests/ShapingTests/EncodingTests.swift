import Netlink
import Profiles
@testable import Shaping
import Testing

@Suite("Human units to kernel units")
struct EncodingTests {
    @Test("Loss becomes netem's u32 probability", arguments: [
        (0.0, UInt32(0)), (100.0, UInt32.max), (50.0, UInt32(2_147_483_648)), (90.0, UInt32(3_865_470_566)),
    ])
    func loss(percent: Double, probability: UInt32) {
        #expect(LossRate(percent: percent).kernelProbability == probability)
    }

    @Test("netem times are microseconds")
    func netemTimes() throws {
        let settings = try #require(Fixtures.plan(Fixtures.jittery).downlink.netem(ReservedHandles.bulkLeaf))
        let options = settings.encoded
        #expect(options.delayMicroseconds == 80_000)
        #expect(options.jitterMicroseconds == 20_000)
        #expect(options.limitPackets == settings.limitPackets)
    }

    @Test("htb rates are bytes per second")
    func htbRates() throws {
        let node = try #require(Fixtures.plan(Fixtures.slowNet).downlink.htbClass(ReservedHandles.profileClass))
        #expect(node.encoded.rateBytesPerSecond == 4000)
        #expect(node.encoded.ceilBytesPerSecond == 4000)
        #expect(node.encoded.quantumBytes == 1514)
    }

    @Test("The htb root names its default class by minor number")
    func htbRoot() {
        #expect(QdiscSettings.htb(defaultClass: ReservedHandles.exemptClass).encoded == .htb(HTBQdiscOptions(defaultClass: 2)))
    }

    @Test("Redirect filters carry the target's interface index")
    func redirect() throws {
        let filter = try #require(Fixtures.plan(Fixtures.slowNet).ingressRedirects.first)
        #expect(filter.encoded(redirectIndex: 7)?.action == .redirect(toInterfaceIndex: 7))
        #expect(filter.flowerFilter == nil)
    }

    @Test("Root filters are flower filters with their handle, priority, keys and class; they have no u32 form")
    func flowerFilters() throws {
        let plan = Fixtures.plan(Fixtures.slowNet)
        let catchAll = try #require(plan.uplink.filters.first { $0.purpose == "all IPv6" })
        #expect(catchAll.encoded(redirectIndex: nil) == nil)
        let flower = try #require(catchAll.flowerFilter)
        #expect(flower.priority == ReservedHandles.Priority.all)
        #expect(flower.handle == catchAll.flowerHandle)
        #expect(flower.key == FlowerKey(etherType: .ipv6))
        #expect(flower.classID == ReservedHandles.bulkClass)
        #expect(plan.uplink.filters.allSatisfy { $0.flowerFilter?.key.isConsistent == true && $0.protocolType == .all })
    }
}

@Suite("Names and exemptions")
struct NamingTests {
    @Test("The IFB is lc-<interface> when that fits in 15 bytes")
    func shortName() {
        #expect(ShapingTarget(interface: "eth0").ifb == "lc-eth0")
        #expect(ShapingTarget(interface: "enp0s31f6").ifb == "lc-enp0s31f6")
    }

    @Test("Long names are shortened with a hash, so similar names do not collide")
    func longName() {
        let first = ShapingTarget(interface: "enx00e04c680001").ifb
        let second = ShapingTarget(interface: "enx00e04c680002").ifb
        #expect(first.utf8.count <= 15)
        #expect(second.utf8.count <= 15)
        #expect(first != second)
        #expect(first.hasPrefix("lc-enx"))
    }

    @Test("A long name with multi-byte characters is shortened at a character's edge, within 15 bytes")
    func longMultiByteName() {
        // The name schemathesis sent (GET /v1/conditions/%F1%92%A6%B8%C3%A8%C2%8F%F0%93%A3%8D%C3%87):
        // cut inside a character, it became a U+FFFD that overran the limit.
        let ifb = ShapingTarget(interface: "\u{526B8}\u{E8}\u{8F}\u{138CD}\u{C7}").ifb
        #expect(ifb.utf8.count <= 15)
        #expect(!ifb.unicodeScalars.contains("\u{FFFD}"))
        #expect(ifb.hasPrefix("lc-\u{526B8}\u{E8}"))
    }

    @Test("Port exemptions read 22, 22/tcp and 53/udp", arguments: [
        ("22", PortExemption(port: 22, transport: .tcp)),
        ("22/tcp", PortExemption(port: 22, transport: .tcp)),
        ("53/UDP", PortExemption(port: 53, transport: .udp)),
    ])
    func ports(text: String, expected: PortExemption) throws {
        #expect(try PortExemption(parsing: text) == expected)
    }

    @Test("Bad port exemptions are refused", arguments: ["0", "65536", "ssh", "22/sctp", ""])
    func badPorts(text: String) {
        #expect(throws: ExemptionParseError.self) { try PortExemption(parsing: text) }
    }

    @Test("Networks clear their host bits and print canonically")
    func networks() throws {
        #expect(try IPNetwork(parsing: "10.1.2.3/8").description == "10.0.0.0/8")
        #expect(try IPNetwork(parsing: "192.0.2.7").description == "192.0.2.7/32")
        #expect(try IPNetwork(parsing: "2001:db8::1/32").description == "2001:db8::/32")
        #expect(try IPNetwork(parsing: "fd00::/8").family == .ipv6)
    }

    @Test("Bad networks are refused", arguments: ["10.0.0.0/33", "fd00::/129", "example.com", "10.0.0/8", "10.0.0.0/x"])
    func badNetworks(text: String) {
        #expect(throws: ExemptionParseError.self) { try IPNetwork(parsing: text) }
    }
}
