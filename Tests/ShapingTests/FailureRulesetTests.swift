import Netlink
import Profiles
@testable import Shaping
import ShapingTestSupport
import Testing

/// The nftables rules of a target's failures: what each failure answers, on which hooks, for
/// whom, and that exemptions come first.
@Suite("Failure rules")
struct FailureRulesetTests {
    static let offline = Profile(name: "Offline", failure: .offline)
    static let serverDown = Profile(name: "Server Down", failure: .refuse)

    static func rules(whole: Profile? = nil, _ matches: [MatchedCondition] = [], planner: Planner = Planner()) throws -> FailureRuleset? {
        try planner.failureRules(on: Fixtures.target, whole: whole, matches: matches)
    }

    @Test("a target without a failure has no table, whatever it shapes")
    func noFailure() throws {
        #expect(try Self.rules(whole: Fixtures.slowNet, [MatchedCondition(slot: 1, match: MatchPlanTests.peer("10.0.0.5"), profile: Fixtures.nastyNet)]) == nil)
        #expect(try Self.rules() == nil)
    }

    @Test("offline on the interface: a SYN is told network unreachable, a segment reset, nothing arrives")
    func wholeOffline() throws {
        let rules = try #require(try Self.rules(whole: Self.offline))
        #expect(rules.table == "linkcond_failures_eth0")
        let output = try #require(rules.chains[.output])
        #expect(output.first == "tcp dport 22 accept")
        #expect(output.contains(#"oifname "eth0" meta l4proto tcp tcp flags & (syn | ack) == syn reject with icmpx type no-route"#))
        #expect(output.contains(#"oifname "eth0" meta l4proto tcp reject with tcp reset"#))
        #expect(output.contains(#"oifname "eth0" meta nfproto ipv4 meta l4proto udp reject with icmp type net-prohibited"#))
        #expect(output.last == #"oifname "eth0" reject with icmpx type no-route"#)
        #expect(rules.chains[.input]?.last == #"iifname "eth0" drop"#)
        #expect(rules.chains[.forward]?.contains(#"iifname "eth0" drop"#) == true)
        // The exemptions come before anything that fails, in every chain.
        for (_, chain) in rules.chains {
            let firstFailure = try #require(chain.firstIndex { $0.contains("reject") || $0.hasSuffix("drop") })
            #expect(chain[..<firstFailure].contains("tcp sport 22 accept"))
            #expect(chain[..<firstFailure].contains { $0.hasPrefix("icmpv6 type { nd-router-solicit") })
        }
    }

    @Test("refuse for one peer's port: a reset for TCP, port unreachable for UDP, to that peer only, and nothing dropped on arrival")
    func peerRefuse() throws {
        let match = MatchPlanTests.peer("10.0.0.5", port: 443)
        let rules = try #require(try Self.rules([MatchedCondition(slot: 3, match: match, profile: Self.serverDown)]))
        let output = try #require(rules.chains[.output])
        #expect(output.contains(#"oifname "eth0" ip daddr 10.0.0.5/32 tcp dport 443 meta l4proto tcp reject with tcp reset"#))
        #expect(output.contains(#"oifname "eth0" ip daddr 10.0.0.5/32 udp dport 443 meta l4proto udp reject with icmpx type port-unreachable"#))
        #expect(!output.contains { $0.contains("10.0.0.5") && !$0.contains("dport 443") })
        #expect(rules.chains[.input] == nil)
    }

    @Test("a device behind the gateway fails in input and forward, from its own address; what goes to it is dropped")
    func deviceOffline() throws {
        let device = PeerMatch(networks: [try IPNetwork(parsing: "192.168.50.7")], port: nil, transports: [], text: "device 192.168.50.7", isDevice: true)
        let rules = try #require(try Self.rules([MatchedCondition(slot: 1, match: device, profile: Self.offline)]))
        for hook in [FailureRuleset.Hook.input, .forward] {
            #expect(rules.chains[hook]?.contains(#"iifname "eth0" ip saddr 192.168.50.7/32 reject with icmpx type no-route"#) == true)
        }
        for hook in [FailureRuleset.Hook.output, .forward] {
            #expect(rules.chains[hook]?.contains(#"oifname "eth0" ip daddr 192.168.50.7/32 drop"#) == true)
        }
    }

    @Test("a peer with a condition of its own keeps it under the interface's failure: its packets pass first")
    func specificBeforeWhole() throws {
        let peer = MatchedCondition(slot: 1, match: MatchPlanTests.peer("10.0.0.5"), profile: Fixtures.slowNet)
        let output = try #require(try Self.rules(whole: Self.offline, [peer])?.chains[.output])
        let pass = try #require(output.firstIndex(of: #"oifname "eth0" ip daddr 10.0.0.5/32 accept"#))
        let fail = try #require(output.firstIndex { $0.hasPrefix(#"oifname "eth0" meta l4proto tcp"#) })
        #expect(pass < fail)
    }

    @Test("the management exemptions of the daemon are the rules' too, both ways")
    func exemptions() throws {
        let planner = Planner(exemptions: Exemptions(ports: [PortExemption(port: 5060, transport: .udp)], networks: [try IPNetwork(parsing: "fd00::/8")]))
        let output = try #require(try Self.rules(whole: Self.offline, planner: planner)?.chains[.output])
        #expect(output.prefix(4) == ["udp dport 5060 accept", "udp sport 5060 accept", "ip6 daddr fd00::/8 accept", "ip6 saddr fd00::/8 accept"])
        #expect(!output.contains("tcp dport 22 accept"))
    }

    @Test("the table is written whole in one transaction, and removed without an error when absent")
    func commands() throws {
        let rules = try #require(try Self.rules(whole: Self.serverDown))
        #expect(rules.commands.hasPrefix("table inet linkcond_failures_eth0\ndelete table inet linkcond_failures_eth0\ntable inet linkcond_failures_eth0 {\n  chain forward {\n"))
        #expect(rules.commands.contains("    type filter hook output priority filter - 10; policy accept;\n"))
        #expect(FailureRuleset.removal(of: "linkcond_failures_eth0") == "table inet linkcond_failures_eth0\ndelete table inet linkcond_failures_eth0\n")
    }

    @Test("tables are named after their interface, or a hash of a name nftables cannot hold")
    func tableNames() throws {
        #expect(FailureRuleset.tableName(for: "enp0s31f6") == "linkcond_failures_enp0s31f6")
        #expect(FailureRuleset.tableName(for: "veth-c1.10") == "linkcond_failures_veth-c1.10")
        let hashed = FailureRuleset.tableName(for: "veth:a")
        #expect(hashed.hasPrefix("linkcond_failures_if_") && hashed.count == "linkcond_failures_if_".count + 8)
        #expect(hashed != FailureRuleset.tableName(for: "veth:b"))
        #expect(throws: ShapingError.self) {
            try Planner().failureRules(on: ShapingTarget(interface: "we\"ird"), whole: Self.offline, matches: [])
        }
    }

    @Test("a failure converges with its tree: written first, removed with the condition, and written back when the tree is refused")
    func convergence() throws {
        let kernel = FakeKernel()
        let filter = FakePacketFilter()
        let engine = ShapingEngine(kernel: kernel, filter: filter)
        let convergence = KernelConvergence(target: Fixtures.target, planner: Planner(), engine: engine, logger: .init(label: "test"))
        try convergence.converge(.whole, to: Self.offline)
        #expect(filter.tables["linkcond_failures_eth0"]?.contains("reject with icmpx type no-route") == true)
        #expect(convergence.isInUse)

        // A tree the kernel refuses leaves the rules that were there.
        kernel.refusal = { step, _ in
            if case .changeQdisc = step { return NetlinkError(code: .invalid, operation: "change", errno: 22, reason: "refused") }
            return nil
        }
        #expect(throws: ShapingError.self) { try convergence.converge(.whole, to: Profile(name: "Slow refusal", downlink: LinkConditions(delay: .milliseconds(100)), failure: .refuse)) }
        #expect(filter.tables["linkcond_failures_eth0"]?.contains("reject with icmpx type no-route") == true)
        #expect(convergence.appliedRules?.chains[.output]?.contains { $0.contains("no-route") } == true)

        kernel.refusal = nil
        try convergence.converge(.whole, to: nil)
        #expect(filter.tables.isEmpty)
        #expect(!convergence.isInUse)
    }

    @Test("refused rules leave the tree untouched and name nftables' reason")
    func refusedRules() throws {
        let kernel = FakeKernel()
        let filter = FakePacketFilter()
        filter.refusal = { _ in NetlinkError(code: .other, operation: "run nftables commands", reason: "Error: Could not process rule: No such file or directory") }
        let convergence = KernelConvergence(target: Fixtures.target, planner: Planner(), engine: ShapingEngine(kernel: kernel, filter: filter), logger: .init(label: "test"))
        let error = try #require(throws: ShapingError.self) { try convergence.converge(.whole, to: Self.offline) }
        #expect(error.code == .missingKernelModule)
        #expect(error.message.contains("nft_reject_inet"))
        #expect(kernel.executed.isEmpty)
        #expect(!convergence.isInUse)
    }
}
