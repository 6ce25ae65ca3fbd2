import Sandboxes
import Testing

@Suite("Firewalls in a sandbox's way")
struct ForwardDropChainTests {
    /// `nft list chains` on a host with Docker (iptables-nft), firewalld and a table of the user's.
    static let chains = """
        table ip filter {
        \tchain DOCKER {
        \t}
        \tchain FORWARD {
        \t\ttype filter hook forward priority filter; policy drop;
        \t}
        \tchain DOCKER-USER {
        \t}
        }
        table ip nat {
        \tchain POSTROUTING {
        \t\ttype nat hook postrouting priority srcnat; policy accept;
        \t}
        }
        table ip6 filter {
        \tchain FORWARD {
        \t\ttype filter hook forward priority filter; policy drop;
        \t}
        }
        table inet firewalld {
        \tchain filter_FORWARD {
        \t\ttype filter hook forward priority filter + 10; policy accept;
        \t}
        }
        table inet mine {
        \tchain fwd {
        \t\ttype filter hook forward priority filter; policy drop;
        \t}
        \tchain in {
        \t\ttype filter hook input priority filter; policy drop;
        \t}
        }

        """

    @Test("Forward chains that drop by default, IPv4's only: Docker's with its own advice, an nft table with nft's")
    func found() throws {
        let found = ForwardDropChain.find(inChains: Self.chains) { _, _ in "" }
        #expect(found == [
            ForwardDropChain(family: "ip", table: "filter", chain: "FORWARD", hasDockerUserChain: true),
            ForwardDropChain(family: "inet", table: "mine", chain: "fwd", hasDockerUserChain: false),
        ])
        let docker = try #require(found.first).warning
        #expect(docker.contains("nft table ip filter, chain FORWARD, policy drop; Docker sets it"))
        #expect(docker.contains("sudo iptables -I DOCKER-USER -i lcsb+ -j ACCEPT"))
        #expect(try #require(found.last).warning.contains(#"sudo nft insert rule inet mine fwd iifname "lcsb*" accept"#))
    }

    @Test("A table whose rules name the sandboxes' devices lets them through already: no warning")
    func allowed() {
        let found = ForwardDropChain.find(inChains: Self.chains) { family, table in
            family == "ip" && table == "filter" ? #"chain DOCKER-USER { iifname "lcsb*" counter accept }"# : ""
        }
        #expect(found.map(\.table) == ["mine"])
    }

    @Test("A plain iptables FORWARD without Docker gets iptables' advice on that chain; nothing to read, nothing found")
    func plainAndEmpty() {
        let plain = ForwardDropChain(family: "ip", table: "filter", chain: "FORWARD", hasDockerUserChain: false)
        #expect(plain.warning.contains("sudo iptables -I FORWARD -i lcsb+ -j ACCEPT"))
        #expect(!plain.warning.contains("Docker"))
        #expect(ForwardDropChain.find(inChains: "") { _, _ in "" }.isEmpty)
    }
}
