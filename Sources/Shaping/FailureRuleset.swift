import IPAddressText
import Profiles

/// The nftables table that puts a target's connection failures in force: one table per target,
/// in the target's network namespace, holding a rule set for each condition with a failure.
///
/// The table is written whole, in one transaction that replaces what it held, so that every
/// change (and its undo) is atomic, and removing it removes every rule linkcond put there.
public struct FailureRuleset: Hashable, Sendable {
    /// `linkcond_failures_eth0`; a name nftables can hold without quotes, unique per interface.
    public var table: String
    /// The rules of each chain, in order: exemptions first, then each condition's.
    public var chains: [Hook: [String]]
    /// The netfilter queues the table hands packets to, each with what linkcondd's responder
    /// does with them: one queue per distinct DNS failure in the namespace, and one for
    /// Offline's connection attempts.
    public var queues: [UInt16: QueueDuty] = [:]

    /// The netfilter hooks the table uses: what a target's apps send passes `output` (or, for
    /// a device behind this machine, `input` and `forward`), what they receive `input`.
    public enum Hook: String, Hashable, Sendable, CaseIterable {
        case input, forward, output
        /// The output hook's route chain, where a datagram an app sends offline is marked so that
        /// routing it again finds `unreachableRule`: the app's `send` fails with ENETUNREACH.
        case route
        /// After the filter chain of the same hook: where the packets a failure held in
        /// `holdQueue` are rejected once linkcondd lets them on (or at once, when no linkcondd
        /// listens). Their rules repeat the filter chain's choices in the same order, so that a
        /// packet another condition let pass passes here too.
        case inputAfterHold = "input_after_hold", forwardAfterHold = "forward_after_hold", outputAfterHold = "output_after_hold"

        var chainType: String {
            switch self {
            case .route: "type route hook output priority mangle"
            case .input, .forward, .output: "type filter hook \(rawValue) priority filter - 10"
            case .inputAfterHold: "type filter hook input priority filter + 10"
            case .forwardAfterHold: "type filter hook forward priority filter + 10"
            case .outputAfterHold: "type filter hook output priority filter + 10"
            }
        }

        /// The chain where what this one held is rejected.
        var afterHold: Hook? {
            switch self {
            case .input: .inputAfterHold
            case .forward: .forwardAfterHold
            case .output: .outputAfterHold
            case .route, .inputAfterHold, .forwardAfterHold, .outputAfterHold: nil
            }
        }
    }

    /// The mark of datagrams that have no route (`0x6c630001`, "lc"), and the priority of the
    /// policy rule that says so, ahead of every table but the local one.
    public static let unreachableMark: UInt32 = 0x6C63_0001
    public static let unreachableRulePriority: UInt32 = 1

    /// The queue where failures hold what they reject with an ICMP error
    /// (`QueueDuty.holdBeforeRejection`): 0x6bff, beside the DNS queues, the same in every table.
    public static let holdQueue: UInt16 = 0x6BFF

    /// The queue of `failure`'s queries: numbers 0x6c00 to 0x6fff ("lc"), the same for the same
    /// failure in every table of a namespace, so that a queue means one answer.
    public static func dnsQueue(for failure: DNSFailure) -> UInt16 {
        0x6C00 + UInt16(ShapingTarget.fnv1a(failure.description) % 0x400)
    }

    /// Whether the table marks datagrams for the unreachable rule, which must then be there.
    public var needsUnreachableRule: Bool { chains[.route]?.contains { $0.contains(" meta mark set ") } == true }

    /// The commands that make the kernel hold exactly this table: created if missing, emptied,
    /// filled, all in one transaction.
    public var commands: String {
        var text = "table inet \(table)\ndelete table inet \(table)\ntable inet \(table) {\n"
        for hook in Hook.allCases {
            guard let rules = chains[hook], !rules.isEmpty else { continue }
            text += "  chain \(hook.rawValue) {\n    \(hook.chainType); policy accept;\n"
            text += rules.map { "    \($0)\n" }.joined()
            text += "  }\n"
        }
        return text + "}\n"
    }

    /// How a rule names the condition it belongs to (its comment): `whole`, or `slot 3` for the
    /// condition with a match in slot 3.
    public static func tag(of slot: UInt16?) -> String {
        slot.map { "slot \($0)" } ?? "whole"
    }

    /// What each condition's rules refused or dropped, in packets, by tag, from the table as
    /// `nft list table` prints it: the sum of the `counter packets N` of each rule with that
    /// `comment`.
    public static func packetCounts(inListing listing: String) -> [String: UInt64] {
        var counts: [String: UInt64] = [:]
        for line in listing.split(separator: "\n") {
            guard let counter = line.firstRange(of: "counter packets "), let comment = line.ranges(of: "comment \"").last else { continue }
            let packets = line[counter.upperBound...].prefix { $0.isNumber }
            let tag = line[comment.upperBound...].prefix { $0 != "\"" }
            guard let value = UInt64(packets) else { continue }
            counts[String(tag), default: 0] += value
        }
        return counts
    }

    /// The prefix of every table linkcond makes, so that leftovers can be found.
    public static let tablePrefix = "linkcond_failures_"

    /// `linkcond_failures_eth0`, or a hash of the interface's name when it holds characters an nftables
    /// name cannot (`linkcond_failures_if_1f3a9c02`).
    public static func tableName(for interface: String) -> String {
        // nftables' unquoted names: a letter or `_`, then letters, digits, `_`, `-` and `.`.
        func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F }
        func isAllowed(_ byte: UInt8) -> Bool { isLetter(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E }
        if let first = interface.utf8.first, isLetter(first) || (first >= 0x30 && first <= 0x39), interface.utf8.allSatisfy(isAllowed) {
            return tablePrefix + interface
        }
        let hex = String(ShapingTarget.fnv1a(interface), radix: 16)
        return tablePrefix + "if_" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}

extension Planner {
    /// The failure rules of a target with these conditions, `nil` when none has a failure: the
    /// target then has no table.
    public func failureRules(on target: ShapingTarget, whole: Profile?, matches: [MatchedCondition]) throws(ShapingError) -> FailureRuleset? {
        if let condition = matches.first(where: { $0.profile.failure == .linkDown }) {
            throw ShapingError(
                code: .kernelRefused,
                message: "link-down takes a whole link down; the condition for \(condition.match.text) is one peer's or device's traffic, which cannot lose a link of its own (use --offline)"
            )
        }
        func hasRules(_ profile: Profile?) -> Bool { profile?.failure?.hasRules == true || profile?.dnsFailure != nil }
        guard hasRules(whole) || matches.contains(where: { hasRules($0.profile) }) else { return nil }
        guard let device = Self.quotedName(target.interface) else {
            throw ShapingError(
                code: .kernelRefused,
                message: "cannot put a failure on \(target.interface): its name holds a quote or a backslash, which nftables rules cannot name"
            )
        }
        var chains: [FailureRuleset.Hook: [String]] = [:]
        var queues: [UInt16: QueueDuty] = [:]
        func queue(for failure: DNSFailure) throws(ShapingError) -> UInt16 {
            let number = FailureRuleset.dnsQueue(for: failure)
            if let other = queues[number], other != .answerDNS(failure) {
                throw ShapingError(code: .kernelRefused, message: "the DNS failures '\(other)' and '\(failure)' on \(target.interface) would share netfilter queue \(number); give one of them another list of names")
            }
            queues[number] = .answerDNS(failure)
            return number
        }
        func add(_ rules: [String], to hooks: [FailureRuleset.Hook]) {
            guard !rules.isEmpty else { return }
            for hook in hooks { chains[hook, default: failureExemptions()] += rules }
        }
        // What the chains after the hold do, condition by condition in the same order: a failing
        // one's held packets rejected, any other's let pass.
        var afterHold: [(rules: [String], hooks: [FailureRuleset.Hook])] = []
        func addAfterHold(_ rules: [String], after hooks: [FailureRuleset.Hook]) {
            afterHold.append((rules, hooks.compactMap(\.afterHold)))
        }
        // Most specific first, as the tc filters rank them: a peer's own condition governs its
        // packets, failing or not, before a wider one's failure.
        func specificity(_ condition: MatchedCondition) -> Int {
            condition.match.networks.map { PeerMatch.specificity(of: $0, hasPort: condition.match.port != nil) }.max() ?? 0
        }
        for condition in matches.sorted(by: { (specificity($0), $1.slot) > (specificity($1), $0.slot) }) {
            let match = condition.match
            // A device's packets arrive on the interface; this machine's own leave through it.
            let (sending, receiving): ([Selector], [Selector]) = match.isDevice
                ? (selectors(device: "iifname \(device)", peer: match, peerAs: "saddr", portAs: nil), selectors(device: "oifname \(device)", peer: match, peerAs: "daddr", portAs: nil))
                : (selectors(device: "oifname \(device)", peer: match, peerAs: "daddr", portAs: "dport"), selectors(device: "iifname \(device)", peer: match, peerAs: "saddr", portAs: "sport"))
            let sendingHooks: [FailureRuleset.Hook] = match.isDevice ? [.input, .forward] : [.output, .forward]
            // Not a device's output: this machine's answers to it (the ICMP errors and resets of
            // the rules above) leave that way.
            let receivingHooks: [FailureRuleset.Hook] = match.isDevice ? [.forward] : [.input, .forward]
            if let dnsFailure = condition.profile.dnsFailure {
                // Lookups go to a resolver: a peer's match selects the resolver, and a port
                // of its own would select none of them.
                let lookups = match.isDevice
                    ? selectors(device: "iifname \(device)", peer: match, peerAs: "saddr", portAs: nil)
                    : selectors(device: "oifname \(device)", peer: match, peerAs: "daddr", portAs: nil)
                let number = try queue(for: dnsFailure)
                add(lookups.flatMap { Self.dnsFailing(dnsFailure, queue: number, of: $0, tag: FailureRuleset.tag(of: condition.slot)) }, to: sendingHooks)
            }
            guard let failure = condition.profile.failure else {
                add(sending.map { "\($0.text) accept" }, to: sendingHooks + (match.isDevice ? [] : [.route]))
                add(receiving.map { "\($0.text) accept" }, to: receivingHooks)
                addAfterHold(sending.map { "\($0.text) accept" }, after: sendingHooks)
                continue
            }
            let tag = FailureRuleset.tag(of: condition.slot)
            add(sending.flatMap { Self.refusals(failure, of: $0, tag: tag) }, to: sendingHooks)
            addAfterHold(sending.flatMap { Self.heldRejections(failure, of: $0) }, after: sendingHooks)
            if failure == .offline && !match.isDevice {
                add(sending.compactMap { Self.unroutable($0, tag: tag) }, to: [.route])
            }
            if failure == .offline {
                add(receiving.map { "\($0.text) counter drop comment \"\(tag)\"" }, to: receivingHooks)
            }
        }
        if let dnsFailure = whole?.dnsFailure {
            let selector = Selector(text: "oifname \(device)", transport: nil)
            add(Self.dnsFailing(dnsFailure, queue: try queue(for: dnsFailure), of: selector, tag: FailureRuleset.tag(of: nil)), to: [.output, .forward])
        }
        if let failure = whole?.failure, failure.hasRules {
            let tag = FailureRuleset.tag(of: nil)
            let selector = Selector(text: "oifname \(device)", transport: nil)
            add(Self.refusals(failure, of: selector, tag: tag), to: [.output, .forward])
            addAfterHold(Self.heldRejections(failure, of: selector), after: [.output, .forward])
            if failure == .offline {
                add([Self.unroutable(selector, tag: tag)].compactMap { $0 }, to: [.route])
                add(["iifname \(device) counter drop comment \"\(tag)\""], to: [.input, .forward])
            }
        }
        if chains.values.contains(where: { $0.contains { $0.contains(" queue flags bypass to \(FailureRuleset.holdQueue) ") } }) {
            queues[FailureRuleset.holdQueue] = .holdBeforeRejection
            for (rules, hooks) in afterHold { add(rules, to: hooks) }
        }
        return FailureRuleset(table: FailureRuleset.tableName(for: target.interface), chains: chains, queues: queues)
    }

    /// What a chain lets pass before any failure: the exemptions from shaping (SSH, the
    /// management networks), IPv6 neighbour discovery, and DHCP, without which the machine
    /// would lose its link or its address while a failure lasts.
    func failureExemptions() -> [String] {
        var rules: [String] = []
        for port in exemptions.ports {
            rules.append("\(port.transport.rawValue) dport \(port.port) accept")
            rules.append("\(port.transport.rawValue) sport \(port.port) accept")
        }
        for network in exemptions.networks {
            let family = network.family == .ipv4 ? "ip" : "ip6"
            rules.append("\(family) daddr \(network) accept")
            rules.append("\(family) saddr \(network) accept")
        }
        rules.append("icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, nd-redirect } accept")
        rules.append("udp sport 68 udp dport 67 accept")
        rules.append("udp sport 546 udp dport 547 accept")
        return rules
    }

    /// Some of the packets a condition's apps exchange, as a rule's matches: `oifname "eth0" ip
    /// daddr 10.0.0.5/32 tcp dport 443`, with the transport it names, if it names one.
    struct Selector {
        var text: String
        var transport: PortExemption.Transport?
    }

    /// The selectors of the packets a condition's apps exchange with its peer, one per network
    /// and transport.
    private func selectors(device: String, peer match: PeerMatch, peerAs direction: String, portAs portDirection: String?) -> [Selector] {
        match.networks.flatMap { network -> [Selector] in
            let family = network.family == .ipv4 ? "ip" : "ip6"
            let address = network.prefixLength == 0
                ? "meta nfproto \(network.family == .ipv4 ? "ipv4" : "ipv6")"
                : "\(family) \(direction) \(network)"
            guard let port = match.port, let portDirection else { return [Selector(text: "\(device) \(address)", transport: nil)] }
            return match.transports.map { Selector(text: "\(device) \(address) \($0.rawValue) \(portDirection) \(port)", transport: $0) }
        }
    }

    /// The rules that fail what an app sends through `selector`.
    ///
    /// Offline holds a connection's SYN in `holdQueue`, to be answered with "network
    /// unreachable" after the hold (`heldRejections`: the connecting socket gives up on it
    /// at once), an established connection's segment with a reset (the app's next
    /// call fails), a datagram with an unreachable (IPv4's net-prohibited, which the kernel hands
    /// to a connected UDP socket as ENETUNREACH; IPv6 has no such code, and its "no route" reaches
    /// only a socket that asks for errors, IPV6_RECVERR), and anything else with network
    /// unreachable. This machine's own datagrams are routed to the unreachable rule before they
    /// get here (`unroutable`). Refuse answers TCP with a reset (ECONNREFUSED to a SYN,
    /// ECONNRESET after) and holds UDP, to be answered with port unreachable after the hold
    /// (ECONNREFUSED to the app's next call; rejected in the same chain, the send itself would
    /// fail with EPERM, as for any datagram a filter drops); other protocols pass, as a host
    /// whose server is down still answers.
    static func refusals(_ failure: ConnectionFailure, of selector: Selector, tag: String) -> [String] {
        let verdicts: [String] = switch failure {
        case .offline: [
            "meta l4proto tcp tcp flags & (syn | ack) == syn counter queue flags bypass to \(FailureRuleset.holdQueue)",
            "meta l4proto tcp counter reject with tcp reset",
            "meta nfproto ipv4 meta l4proto udp counter reject with icmp type net-prohibited",
            "meta nfproto ipv6 meta l4proto udp counter reject with icmpv6 type no-route",
            "counter reject with icmpx type no-route",
        ]
        case .refuse: [
            "meta l4proto tcp counter reject with tcp reset",
            "meta l4proto udp counter queue flags bypass to \(FailureRuleset.holdQueue)",
        ]
        case .linkDown: []
        }
        // A selector that names a transport takes that transport's verdicts alone, which answer all of it.
        let relevant = selector.transport.map { transport in verdicts.filter { $0.contains("l4proto \(transport.rawValue)") } } ?? verdicts
        // Each counted, and named after its condition, so that what a failure refused is read per condition.
        return relevant.map { "\(selector.text) \($0) comment \"\(tag)\"" }
    }

    /// The rules after the hold that reject what `failure` held of `selector`'s packets: an
    /// offline connection attempt with "no route" (ENETUNREACH), a datagram to a refused port
    /// with "port unreachable" (ECONNREFUSED). Not counted: each was counted as it was held.
    static func heldRejections(_ failure: ConnectionFailure, of selector: Selector) -> [String] {
        let rules: [String] = switch failure {
        case .offline: ["meta l4proto tcp tcp flags & (syn | ack) == syn reject with icmpx type no-route"]
        case .refuse: ["meta l4proto udp reject with icmpx type port-unreachable"]
        case .linkDown: []
        }
        return rules.filter { rule in selector.transport.map { rule.contains("l4proto \($0.rawValue)") } ?? true }.map { "\(selector.text) \($0)" }
    }

    /// The rules that fail the lookups sent through `selector`: each query over UDP goes to
    /// `queue`, where linkcondd's responder answers it (or, for a timeout, drops it) when it asks
    /// for a name that fails, and lets it pass otherwise; with the queue unheard (linkcondd
    /// stopped) it passes. Lookups over TCP, whose names a rule cannot read, fail as a whole
    /// when every name does: refused (the resolver gives up on that server at once), or dropped for a
    /// timeout; with a list of names they pass.
    static func dnsFailing(_ failure: DNSFailure, queue: UInt16, of selector: Selector, tag: String) -> [String] {
        var rules = ["\(selector.text) udp dport 53 counter queue flags bypass to \(queue) comment \"\(tag)\""]
        if failure.names.isEmpty {
            let verdict = failure.kind == .timeout ? "drop" : "reject with tcp reset"
            rules.append("\(selector.text) tcp dport 53 counter \(verdict) comment \"\(tag)\"")
        }
        return rules
    }

    /// The route chain's rule for the datagrams an app sends through `selector` while offline:
    /// marked, so that routing them again fails and the app's `send` returns ENETUNREACH, as on a
    /// machine without a route (a drop would return EPERM). `nil` for a TCP selector: TCP ignores
    /// an error at its SYN's transmission and would wait out its retries instead.
    static func unroutable(_ selector: Selector, tag: String) -> String? {
        guard selector.transport != .tcp else { return nil }
        let mark = "0x" + String(FailureRuleset.unreachableMark, radix: 16)
        return "\(selector.text) meta l4proto udp counter meta mark set \(mark) comment \"\(tag)\""
    }

    /// `"eth0"`, or `nil` for a name nftables' quoted strings cannot hold.
    package static func quotedName(_ interface: String) -> String? {
        guard !interface.contains("\"") && !interface.contains("\\") else { return nil }
        return "\"\(interface)\""
    }
}
