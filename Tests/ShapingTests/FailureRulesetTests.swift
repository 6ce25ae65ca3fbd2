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
        #expect(output.contains(#"oifname "eth0" meta l4proto tcp tcp flags & (syn | ack) == syn counter queue flags bypass to 27647 comment "whole""#))
        #expect(output.contains(#"oifname "eth0" meta l4proto tcp counter reject with tcp reset comment "whole""#))
        #expect(output.contains(#"oifname "eth0" meta nfproto ipv4 meta l4proto udp counter reject with icmp type net-prohibited comment "whole""#))
        #expect(output.last == #"oifname "eth0" counter reject with icmpx type no-route comment "whole""#)
        #expect(rules.chains[.input]?.last == #"iifname "eth0" counter drop comment "whole""#)
        #expect(rules.chains[.forward]?.contains(#"iifname "eth0" counter drop comment "whole""#) == true)
        // The exemptions come before anything that fails, in every chain.
        for (_, chain) in rules.chains {
            let firstFailure = try #require(chain.firstIndex { $0.contains("reject") || $0.contains(" drop ") || $0.contains("mark set") })
            #expect(chain[..<firstFailure].contains("tcp sport 22 accept"))
            #expect(chain[..<firstFailure].contains { $0.hasPrefix("icmpv6 type { nd-router-solicit") })
        }
    }

    @Test("offline holds a connection attempt in linkcondd's queue, then rejects it in the chain after, where other conditions' attempts pass as before")
    func heldConnectionAttempts() throws {
        let shaped = MatchedCondition(slot: 1, match: MatchPlanTests.peer("10.0.0.5"), profile: Fixtures.nastyNet)
        let rules = try #require(try Self.rules(whole: Self.offline, [shaped]))
        #expect(rules.queues == [FailureRuleset.holdQueue: .holdBeforeRejection])
        let syn = "meta l4proto tcp tcp flags & (syn | ack) == syn"
        for hook in [FailureRuleset.Hook.output, .forward] {
            let afterHook = try #require(hook.afterHold)
            let after = try #require(rules.chains[afterHook])
            #expect(after.first == "tcp dport 22 accept")
            #expect(Array(after.suffix(2)) == [#"oifname "eth0" ip daddr 10.0.0.5/32 accept"#, #"oifname "eth0" \#(syn) reject with icmpx type no-route"#])
        }
        #expect(rules.chains[.inputAfterHold] == nil)
        #expect(rules.commands.contains("  chain output_after_hold {\n    type filter hook output priority filter + 10; policy accept;\n"))
        // A peer offline for UDP alone holds nothing (its datagrams are unroutable); a peer's TCP
        // port refused, nothing either (the reset reaches a held socket too).
        let udp = MatchedCondition(slot: 3, match: MatchPlanTests.peer("10.0.0.5", port: 53, [.udp]), profile: Self.offline)
        let datagrams = try #require(try Self.rules([udp]))
        #expect(datagrams.queues.isEmpty && datagrams.chains[.outputAfterHold] == nil)
        let tcp = MatchedCondition(slot: 4, match: MatchPlanTests.peer("10.0.0.5", port: 443, [.tcp]), profile: Self.serverDown)
        let refused = try #require(try Self.rules([tcp]))
        #expect(refused.queues.isEmpty && refused.chains[.outputAfterHold] == nil)
        // A device's attempts are held where they arrive: input and forward.
        let device = PeerMatch(networks: [try IPNetwork(parsing: "192.168.50.7")], port: nil, transports: [], text: "device", isDevice: true)
        let devices = try #require(try Self.rules([MatchedCondition(slot: 2, match: device, profile: Self.offline)]))
        #expect(devices.chains[.inputAfterHold]?.last == #"iifname "eth0" ip saddr 192.168.50.7/32 \#(syn) reject with icmpx type no-route"#)
        #expect(devices.chains[.forwardAfterHold]?.last == devices.chains[.inputAfterHold]?.last)
        #expect(devices.chains[.outputAfterHold] == nil)
    }

    @Test("offline marks an app's datagrams for the unreachable rule (its send fails with ENETUNREACH); refuse and devices do not, nor TCP")
    func unroutableDatagrams() throws {
        let whole = try #require(try Self.rules(whole: Self.offline))
        #expect(whole.needsUnreachableRule)
        #expect(whole.chains[.route]?.last == #"oifname "eth0" meta l4proto udp counter meta mark set 0x6c630001 comment "whole""#)
        #expect(whole.commands.contains("  chain route {\n    type route hook output priority mangle; policy accept;\n"))
        #expect(try Self.rules(whole: Self.serverDown)?.needsUnreachableRule == false)
        let device = PeerMatch(networks: [try IPNetwork(parsing: "192.168.50.7")], port: nil, transports: [], text: "device", isDevice: true)
        #expect(try Self.rules([MatchedCondition(slot: 1, match: device, profile: Self.offline)])?.needsUnreachableRule == false)
        let tcpOnly = MatchedCondition(slot: 2, match: MatchPlanTests.peer("10.0.0.5", port: 443, [.tcp]), profile: Self.offline)
        #expect(try Self.rules([tcpOnly])?.needsUnreachableRule == false)
        let udp = MatchedCondition(slot: 3, match: MatchPlanTests.peer("10.0.0.5", port: 53, [.udp]), profile: Self.offline)
        #expect(try Self.rules([udp])?.chains[.route]?.last == #"oifname "eth0" ip daddr 10.0.0.5/32 udp dport 53 meta l4proto udp counter meta mark set 0x6c630001 comment "slot 3""#)
    }

    @Test("refuse for one peer's port: a reset for TCP, port unreachable for UDP, to that peer only, and nothing dropped on arrival")
    func peerRefuse() throws {
        let match = MatchPlanTests.peer("10.0.0.5", port: 443)
        let rules = try #require(try Self.rules([MatchedCondition(slot: 3, match: match, profile: Self.serverDown)]))
        let output = try #require(rules.chains[.output])
        #expect(output.filter { $0.contains("10.0.0.5") } == [
            #"oifname "eth0" ip daddr 10.0.0.5/32 tcp dport 443 meta l4proto tcp counter reject with tcp reset comment "slot 3""#,
            #"oifname "eth0" ip daddr 10.0.0.5/32 udp dport 443 meta l4proto udp counter queue flags bypass to 27647 comment "slot 3""#,
        ])
        // The datagram is rejected after the hold: its send succeeds, its socket then hears ECONNREFUSED.
        #expect(rules.chains[.outputAfterHold]?.last == #"oifname "eth0" ip daddr 10.0.0.5/32 udp dport 443 meta l4proto udp reject with icmpx type port-unreachable"#)
        #expect(!output.contains { $0.contains("10.0.0.5") && !$0.contains("dport 443") })
        #expect(rules.chains[.input] == nil)
    }

    @Test("a device behind the gateway fails in input and forward, from its own address; what is forwarded to it is dropped")
    func deviceOffline() throws {
        let device = PeerMatch(networks: [try IPNetwork(parsing: "192.168.50.7")], port: nil, transports: [], text: "device 192.168.50.7", isDevice: true)
        let rules = try #require(try Self.rules([MatchedCondition(slot: 1, match: device, profile: Self.offline)]))
        for hook in [FailureRuleset.Hook.input, .forward] {
            #expect(rules.chains[hook]?.contains(#"iifname "eth0" ip saddr 192.168.50.7/32 counter reject with icmpx type no-route comment "slot 1""#) == true)
        }
        #expect(rules.chains[.forward]?.contains(#"oifname "eth0" ip daddr 192.168.50.7/32 counter drop comment "slot 1""#) == true)
        // The gateway's own answers to the device (the errors above) leave through output: never dropped.
        #expect(rules.chains[.output] == nil)
    }

    @Test("a peer with a condition of its own keeps it under the interface's failure: its packets pass first")
    func specificBeforeWhole() throws {
        let peer = MatchedCondition(slot: 1, match: MatchPlanTests.peer("10.0.0.5"), profile: Fixtures.slowNet)
        let output = try #require(try Self.rules(whole: Self.offline, [peer])?.chains[.output])
        let pass = try #require(output.firstIndex(of: #"oifname "eth0" ip daddr 10.0.0.5/32 accept"#))
        let fail = try #require(output.firstIndex { $0.hasPrefix(#"oifname "eth0" meta l4proto tcp"#) })
        #expect(pass < fail)
        // Its datagrams too: they are not routed to the unreachable rule.
        let route = try #require(try Self.rules(whole: Self.offline, [peer])?.chains[.route])
        let routed = try #require(route.firstIndex(of: #"oifname "eth0" ip daddr 10.0.0.5/32 accept"#))
        let marked = try #require(route.firstIndex { $0.contains("meta mark set") })
        #expect(routed < marked)
        // Only passing rules: no mark, no policy rule needed.
        #expect(try Self.rules([peer, MatchedCondition(slot: 2, match: MatchPlanTests.peer("10.0.0.6"), profile: Self.serverDown)])?.needsUnreachableRule == false)
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
        #expect(filter.unreachableRules)
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
        #expect(!filter.unreachableRules)
        #expect(!convergence.isInUse)
    }

    @Test("a target without a table is not asked to remove one: only a listing, no table made to be deleted")
    func removalOfNothing() throws {
        let filter = FakePacketFilter()
        let engine = ShapingEngine(kernel: FakeKernel(), filter: filter)
        try engine.install(nil, on: Fixtures.target)
        #expect(filter.transactions == ["list tables inet"])
        // A kernel whose nftables cannot list the inet family (User-mode Linux's) has nothing to remove either.
        filter.refusal = { _ in NetlinkError(code: .other, operation: "run nftables commands", reason: "Error: Could not process rule: Operation not supported") }
        try engine.install(nil, on: Fixtures.target)
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

@Suite("Failure counters")
struct FailureCounterTests {
    @Test("every failing rule counts, named after its condition; a listing's counters sum per condition")
    func counted() throws {
        let peer = MatchedCondition(slot: 4, match: MatchPlanTests.peer("10.0.0.5", port: 443), profile: FailureRulesetTests.serverDown)
        let rules = try #require(try Planner().failureRules(on: Fixtures.target, whole: FailureRulesetTests.offline, matches: [peer]))
        // The chains after the hold reject what the filter chains held and counted already.
        let afterHold: Set<FailureRuleset.Hook> = [.inputAfterHold, .forwardAfterHold, .outputAfterHold]
        let counting = rules.chains.filter { !afterHold.contains($0.key) }.values.flatMap { $0 }
        let failing = counting.filter { $0.contains("reject") || $0.contains(" drop") || $0.contains(" queue ") }
        #expect(!failing.isEmpty)
        #expect(rules.chains.filter { afterHold.contains($0.key) }.values.joined().allSatisfy { !$0.contains(" counter ") })
        for rule in failing {
            #expect(rule.contains(" counter "), "\(rule)")
            #expect(rule.hasSuffix(#"comment "whole""#) || rule.hasSuffix(#"comment "slot 4""#), "\(rule)")
        }
        let listing = """
        table inet linkcond_failures_eth0 {
        	chain output {
        		type filter hook output priority filter - 10; policy accept;
        		tcp dport 22 accept
        		oifname "eth0" ip daddr 10.0.0.5 tcp dport 443 meta l4proto tcp counter packets 7 bytes 420 reject with tcp reset comment "slot 4"
        		oifname "eth0" meta l4proto tcp tcp flags & (syn | ack) == syn counter packets 3 bytes 180 reject with icmpx no-route comment "whole"
        		oifname "eth0" counter packets 2 bytes 100 reject with icmpx no-route comment "whole"
        	}
        	chain input {
        		iifname "eth0" counter packets 5 bytes 900 drop comment "whole"
        	}
        }
        """
        #expect(FailureRuleset.packetCounts(inListing: listing) == ["slot 4": 7, "whole": 10])
    }

    @Test("a convergence reads each failing slot's count from one listing; a slot without a failure has none")
    func perSlot() throws {
        let filter = FakePacketFilter()
        let convergence = KernelConvergence(
            target: Fixtures.target, planner: Planner(), engine: ShapingEngine(kernel: FakeKernel(), filter: filter), logger: .init(label: "test")
        )
        let match = MatchPlanTests.peer("10.0.0.5")
        try convergence.converge(.whole, to: FailureRulesetTests.offline)
        try convergence.converge(.match(2, match), to: Fixtures.slowNet)
        filter.listing = #"    oifname "eth0" counter packets 12 bytes 1 reject with icmpx no-route comment "whole""# + "\n"
        #expect(convergence.failedPackets(of: [.whole, .match(2, match)]) == [.whole: 12])
    }
}

@Suite("DNS failure rules")
struct DNSFailureRulesetTests {
    static let nxdomain = Profile(name: "No Names", dnsFailure: DNSFailure(kind: .nxdomain))

    @Test("the interface's lookups go to one queue (passing when nobody listens), and TCP lookups are refused")
    func whole() throws {
        let rules = try #require(try FailureRulesetTests.rules(whole: Self.nxdomain))
        let queue = FailureRuleset.dnsQueue(for: DNSFailure(kind: .nxdomain))
        #expect(rules.queues == [queue: .answerDNS(DNSFailure(kind: .nxdomain))])
        #expect((0x6C00...0x6FFF).contains(queue))
        let output = try #require(rules.chains[.output])
        #expect(output.contains(#"oifname "eth0" udp dport 53 counter queue flags bypass to \#(queue) comment "whole""#))
        #expect(output.contains(#"oifname "eth0" tcp dport 53 counter reject with tcp reset comment "whole""#))
        #expect(rules.chains[.input] == nil && rules.chains[.route] == nil)
        #expect(!rules.needsUnreachableRule)
    }

    @Test("a timeout drops TCP lookups; a list of names lets TCP pass (a rule cannot read their names)")
    func timeoutAndNames() throws {
        let timeout = try #require(try FailureRulesetTests.rules(whole: Profile(name: "T", dnsFailure: DNSFailure(kind: .timeout))))
        #expect(timeout.chains[.output]?.contains { $0.hasSuffix(#"tcp dport 53 counter drop comment "whole""#) } == true)
        let listed = try #require(try FailureRulesetTests.rules(whole: Profile(name: "L", dnsFailure: DNSFailure(kind: .nxdomain, names: ["a.example"]))))
        #expect(listed.chains[.output]?.contains { $0.contains("tcp dport 53") } == false)
        #expect(listed.queues.values.first == .answerDNS(DNSFailure(kind: .nxdomain, names: ["a.example"])))
    }

    @Test("a device's lookups are queued as they arrive and as they are forwarded; a peer's by its address whatever its port")
    func deviceAndPeer() throws {
        let device = PeerMatch(networks: [try IPNetwork(parsing: "192.168.50.7")], port: nil, transports: [], text: "device", isDevice: true)
        let rules = try #require(try FailureRulesetTests.rules([MatchedCondition(slot: 4, match: device, profile: Self.nxdomain)]))
        for hook in [FailureRuleset.Hook.input, .forward] {
            #expect(rules.chains[hook]?.contains { $0.hasPrefix(#"iifname "eth0" ip saddr 192.168.50.7/32 udp dport 53 counter queue"#) && $0.hasSuffix(#"comment "slot 4""#) } == true)
        }
        let peer = MatchedCondition(slot: 5, match: MatchPlanTests.peer("10.0.0.53", port: 853, [.tcp]), profile: Self.nxdomain)
        let peerRules = try #require(try FailureRulesetTests.rules([peer]))
        #expect(peerRules.chains[.output]?.contains { $0.hasPrefix(#"oifname "eth0" ip daddr 10.0.0.53/32 udp dport 53 counter queue"#) } == true)
    }

    @Test("DNS rules come after the exemptions and before an Offline's refusals of the same condition")
    func order() throws {
        var both = FailureRulesetTests.offline
        both.dnsFailure = DNSFailure(kind: .servfail)
        let output = try #require(try FailureRulesetTests.rules(whole: both)?.chains[.output])
        let queue = try #require(output.firstIndex { $0.contains(" queue ") })
        let refusal = try #require(output.firstIndex { $0.contains("reject with icmpx") })
        #expect(queue < refusal)
        #expect(output[..<queue].contains("tcp dport 22 accept"))
    }

    @Test("the responder is told its queues before the table is written, and stops with the table")
    func responder() throws {
        let filter = FakePacketFilter()
        let engine = ShapingEngine(kernel: FakeKernel(), filter: filter)
        let rules = try #require(try FailureRulesetTests.rules(whole: Self.nxdomain))
        try engine.install(rules, on: Fixtures.target)
        #expect(filter.answered[rules.table] == rules.queues)
        try engine.install(nil, on: Fixtures.target)
        #expect(filter.answered.isEmpty)
        #expect(filter.tables.isEmpty)
    }

    @Test("a table the kernel refuses leaves the responder answering what it answered before")
    func refusedTable() throws {
        let filter = FakePacketFilter()
        let engine = ShapingEngine(kernel: FakeKernel(), filter: filter)
        filter.refusal = { commands in commands.contains("queue") ? NetlinkError(code: .other, operation: "nft", reason: "No such file or directory") : nil }
        let rules = try #require(try FailureRulesetTests.rules(whole: Self.nxdomain))
        #expect(throws: ShapingError.self) { try engine.install(rules, on: Fixtures.target) }
        #expect(filter.answered.isEmpty)
    }
}

@Suite("Link down")
struct LinkDownTests {
    static let linkDown = Profile(name: "Link Down", failure: .linkDown)

    @Test("link-down takes the link down first, needs no table, comes back with off, and goes back up when the tree is refused")
    func convergence() throws {
        let kernel = FakeKernel()
        let filter = FakePacketFilter()
        let convergence = KernelConvergence(target: Fixtures.target, planner: Planner(), engine: ShapingEngine(kernel: kernel, filter: filter), logger: .init(label: "test"))
        try convergence.converge(.whole, to: Self.linkDown)
        #expect(filter.downLinks == ["eth0"])
        #expect(filter.tables.isEmpty && convergence.appliedRules == nil)
        try convergence.converge(.whole, to: Fixtures.slowNet)
        #expect(filter.downLinks.isEmpty)

        kernel.refusal = { step, _ in
            if case .changeQdisc = step { return NetlinkError(code: .invalid, operation: "change", errno: 22, reason: "refused") }
            return nil
        }
        var slowAndDown = Fixtures.nastyNet
        slowAndDown.failure = .linkDown
        #expect(throws: ShapingError.self) { try convergence.converge(.whole, to: slowAndDown) }
        #expect(filter.downLinks.isEmpty)
        kernel.refusal = nil
        try convergence.converge(.whole, to: Self.linkDown)
        try convergence.removeAll()
        #expect(filter.downLinks.isEmpty)
    }

    @Test("a link the kernel will not take down leaves everything as it was, with the reason")
    func refused() throws {
        let kernel = FakeKernel()
        let filter = FakePacketFilter()
        filter.linkRefusal = NetlinkError(code: .other, operation: "take the link of eth0 down", reason: "eth0 is in linkcondd's own network namespace")
        let convergence = KernelConvergence(target: Fixtures.target, planner: Planner(), engine: ShapingEngine(kernel: kernel, filter: filter), logger: .init(label: "test"))
        let error = try #require(throws: ShapingError.self) { try convergence.converge(.whole, to: Self.linkDown) }
        #expect(error.message.contains("own network namespace"))
        #expect(kernel.executed.isEmpty && !convergence.isInUse)
    }

    @Test("a peer's or device's condition cannot take a link down")
    func notForPeers() throws {
        let peer = MatchedCondition(slot: 1, match: MatchPlanTests.peer("10.0.0.5"), profile: Self.linkDown)
        let error = try #require(throws: ShapingError.self) { try Planner().failureRules(on: Fixtures.target, whole: nil, matches: [peer]) }
        #expect(error.message.contains("--offline"))
    }
}
