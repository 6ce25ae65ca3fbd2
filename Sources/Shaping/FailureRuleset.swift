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

    /// The netfilter hooks the table uses: what a target's apps send passes `output` (or, for
    /// a device behind this machine, `input` and `forward`), what they receive `input`.
    public enum Hook: String, Hashable, Sendable, CaseIterable {
        case input, forward, output
    }

    /// The commands that make the kernel hold exactly this table: created if missing, emptied,
    /// filled, all in one transaction.
    public var commands: String {
        var text = "table inet \(table)\ndelete table inet \(table)\ntable inet \(table) {\n"
        for hook in Hook.allCases {
            guard let rules = chains[hook], !rules.isEmpty else { continue }
            text += "  chain \(hook.rawValue) {\n    type filter hook \(hook.rawValue) priority filter - 10; policy accept;\n"
            text += rules.map { "    \($0)\n" }.joined()
            text += "  }\n"
        }
        return text + "}\n"
    }

    /// The commands that remove the table, if it is there.
    public static func removal(of table: String) -> String {
        "table inet \(table)\ndelete table inet \(table)\n"
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
        var hash: UInt32 = 2_166_136_261
        for byte in interface.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let hex = String(hash, radix: 16)
        return tablePrefix + "if_" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}

extension Planner {
    /// The failure rules of a target with these conditions, `nil` when none has a failure: the
    /// target then has no table.
    public func failureRules(on target: ShapingTarget, whole: Profile?, matches: [MatchedCondition]) throws(ShapingError) -> FailureRuleset? {
        guard whole?.failure != nil || matches.contains(where: { $0.profile.failure != nil }) else { return nil }
        guard let device = Self.quotedName(target.interface) else {
            throw ShapingError(
                code: .kernelRefused,
                message: "cannot put a failure on \(target.interface): its name holds a quote or a backslash, which nftables rules cannot name"
            )
        }
        var chains: [FailureRuleset.Hook: [String]] = [:]
        func add(_ rules: [String], to hooks: [FailureRuleset.Hook]) {
            for hook in hooks { chains[hook, default: failureExemptions()] += rules }
        }
        // Most specific first, as the tc filters rank them: a peer's own condition governs its
        // packets, failing or not, before a wider one's failure.
        func specificity(_ condition: MatchedCondition) -> Int {
            condition.match.networks.map { PeerMatch.specificity(of: $0, hasPort: condition.match.port != nil) }.max() ?? 0
        }
        for condition in matches.sorted(by: { (specificity($0), $1.slot) > (specificity($1), $0.slot) }) {
            let match = condition.match
            // A device's packets arrive on the interface; this machine's own leave through it.
            let (sending, receiving): ([String], [String]) = match.isDevice
                ? (selectors(device: "iifname \(device)", peer: match, peerAs: "saddr", portAs: nil), selectors(device: "oifname \(device)", peer: match, peerAs: "daddr", portAs: nil))
                : (selectors(device: "oifname \(device)", peer: match, peerAs: "daddr", portAs: "dport"), selectors(device: "iifname \(device)", peer: match, peerAs: "saddr", portAs: "sport"))
            let sendingHooks: [FailureRuleset.Hook] = match.isDevice ? [.input, .forward] : [.output, .forward]
            let receivingHooks: [FailureRuleset.Hook] = match.isDevice ? [.output, .forward] : [.input, .forward]
            guard let failure = condition.profile.failure else {
                add(sending.map { "\($0) accept" }, to: sendingHooks)
                add(receiving.map { "\($0) accept" }, to: receivingHooks)
                continue
            }
            add(sending.flatMap { Self.refusals(failure, of: $0) }, to: sendingHooks)
            if failure == .offline {
                add(receiving.map { "\($0) drop" }, to: receivingHooks)
            }
        }
        if let failure = whole?.failure {
            add(Self.refusals(failure, of: "oifname \(device)"), to: [.output, .forward])
            if failure == .offline { add(["iifname \(device) drop"], to: [.input, .forward]) }
        }
        return FailureRuleset(table: FailureRuleset.tableName(for: target.interface), chains: chains)
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

    /// The selectors of the packets a condition's apps exchange with its peer, one per network
    /// and transport: `oifname "eth0" ip daddr 10.0.0.5 tcp dport 443`.
    private func selectors(device: String, peer match: PeerMatch, peerAs direction: String, portAs portDirection: String?) -> [String] {
        match.networks.flatMap { network -> [String] in
            let family = network.family == .ipv4 ? "ip" : "ip6"
            let address = network.prefixLength == 0
                ? "meta nfproto \(network.family == .ipv4 ? "ipv4" : "ipv6")"
                : "\(family) \(direction) \(network)"
            guard let port = match.port, let portDirection else { return ["\(device) \(address)"] }
            return match.transports.map { "\(device) \(address) \($0.rawValue) \(portDirection) \(port)" }
        }
    }

    /// The rules that fail what an app sends through `selector`.
    ///
    /// Offline answers a connection's SYN with "network unreachable" (a connecting socket gives
    /// up on it at once), an established connection's segment with a reset (the app's next
    /// call fails), a datagram with an unreachable that the kernel hands to a connected UDP
    /// socket (IPv4's net-prohibited is ENETUNREACH; IPv6's code 2, EHOSTUNREACH, is the one
    /// such code it has), and anything else with network unreachable. Refuse answers TCP with
    /// a reset (ECONNREFUSED to a SYN, ECONNRESET after) and UDP with port unreachable
    /// (ECONNREFUSED); other protocols pass, as a host whose server is down still answers.
    static func refusals(_ failure: ConnectionFailure, of selector: String) -> [String] {
        switch failure {
        case .offline:
            return [
                "\(selector) meta l4proto tcp tcp flags & (syn | ack) == syn reject with icmpx type no-route",
                "\(selector) meta l4proto tcp reject with tcp reset",
                "\(selector) meta nfproto ipv4 meta l4proto udp reject with icmp type net-prohibited",
                "\(selector) meta nfproto ipv6 meta l4proto udp reject with icmpv6 type 2",
                "\(selector) reject with icmpx type no-route",
            ]
        case .refuse:
            return [
                "\(selector) meta l4proto tcp reject with tcp reset",
                "\(selector) meta l4proto udp reject with icmpx type port-unreachable",
            ]
        }
    }

    /// `"eth0"`, or `nil` for a name nftables' quoted strings cannot hold.
    static func quotedName(_ interface: String) -> String? {
        guard !interface.contains("\"") && !interface.contains("\\") else { return nil }
        return "\"\(interface)\""
    }
}
