/// A firewall chain of someone else's that drops forwarded IPv4 packets unless a rule accepts
/// them (Docker's `FORWARD`, policy drop). In nftables an `accept` ends only its own chain, so
/// the sandboxes' NAT table cannot let their traffic past it: the sandbox reaches nothing, and
/// its user is told how to allow it, rather than left guessing. linkcond never edits it.
public struct ForwardDropChain: Hashable, Sendable {
    public var family: String
    public var table: String
    public var chain: String
    /// Whether the table has Docker's chain for its users' own rules, evaluated first.
    public var hasDockerUserChain: Bool

    public init(family: String, table: String, chain: String, hasDockerUserChain: Bool) {
        self.family = family
        self.table = table
        self.chain = chain
        self.hasDockerUserChain = hasDockerUserChain
    }

    /// What the sandbox's user reads: what drops, and the commands that let sandboxes through.
    public var warning: String {
        let location = "nft table \(family) \(table), chain \(chain), policy drop"
        let (owner, fix): (String, String)
        if hasDockerUserChain {
            owner = "; Docker sets it"
            fix = "sudo iptables -I DOCKER-USER -i lcsb+ -j ACCEPT && sudo iptables -I DOCKER-USER -o lcsb+ -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
        } else if family == "ip", table == "filter" {
            owner = ""
            fix = "sudo iptables -I \(chain) -i lcsb+ -j ACCEPT && sudo iptables -I \(chain) -o lcsb+ -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
        } else {
            owner = ""
            fix = "sudo nft insert rule \(family) \(table) \(chain) iifname \"lcsb*\" accept && sudo nft insert rule \(family) \(table) \(chain) oifname \"lcsb*\" ct state established,related accept"
        }
        return "the host's firewall drops forwarded packets (\(location)\(owner)), so the sandbox may reach nothing beyond the host; to let sandboxes through: \(fix)"
    }

    /// The chains of `chains` (`nft list chains`) hooked at forward that drop by default, in
    /// families that see IPv4, whose table's text (`tableText`, `nft list table`) does not name
    /// the sandboxes' devices: a table that does is taken to let them through already.
    public static func find(inChains chains: String, tableText: (_ family: String, _ table: String) -> String) -> [ForwardDropChain] {
        var table: (family: String, name: String)?
        var chain: String?
        var dropping: [(family: String, table: String, chain: String)] = []
        var chainsByTable: [String: [String]] = [:]
        for line in chains.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if words.count == 4, words[0] == "table", words[3] == "{" {
                table = (words[1], words[2])
            } else if words.count == 3, words[0] == "chain", words[2] == "{", let table {
                chain = words[1]
                chainsByTable["\(table.family) \(table.name)", default: []].append(words[1])
            } else if let table, let chain, ["ip", "inet"].contains(table.family),
                line.contains("hook forward "), line.contains("policy drop;")
            {
                dropping.append((table.family, table.name, chain))
            }
        }
        return dropping.compactMap { entry in
            // `"lcsb*"`, `"lcsb0"`: a rule about the sandboxes' devices, the user's own allowance.
            guard !tableText(entry.family, entry.table).contains("\"\(SandboxAddressing.hostInterfacePrefix)") else { return nil }
            let siblings = chainsByTable["\(entry.family) \(entry.table)"] ?? []
            return ForwardDropChain(
                family: entry.family, table: entry.table, chain: entry.chain,
                hasDockerUserChain: siblings.contains("DOCKER-USER")
            )
        }
    }
}
