import ArgumentParser
import ControlAPI
@testable import linkcond
import Testing

@Suite("run --isolated")
struct SandboxOptionTests {
    @Test("--isolated takes no target: the sandbox is the target")
    func noTarget() {
        #expect(throws: (any Error).self) {
            _ = try LinkCond.parseAsRoot(["run", "--isolated", "--interface", "eth1", "--profile", "Slow Net", "--", "true"])
        }
        #expect(throws: (any Error).self) {
            _ = try LinkCond.parseAsRoot(["run", "--isolated", "--to", "10.0.0.5", "--profile", "Slow Net", "--", "true"])
        }
        let run = try? #require(try LinkCond.parseAsRoot(["run", "--isolated", "--profile", "Slow Net", "--", "npm", "test"]) as? Run)
        #expect(run?.isolated == true && run?.arguments == ["npm", "test"])
    }

    @Test("A resolver only on the host's loopback is replaced by the upstream servers; a reachable one is kept")
    func resolvers() {
        #expect(SandboxDNS.onlyLoopback("nameserver 127.0.0.53\noptions edns0 trust-ad\n"))
        #expect(SandboxDNS.onlyLoopback("# local\nnameserver 127.0.0.1\nnameserver ::1\n"))
        #expect(!SandboxDNS.onlyLoopback("nameserver 127.0.0.53\nnameserver 192.0.2.53\n"))
        #expect(!SandboxDNS.onlyLoopback("nameserver 10.0.0.1\n"))
        #expect(!SandboxDNS.onlyLoopback("search example.com\n"), "no nameserver at all: the resolver's own default, nothing to replace")
        #expect(SandboxDNS.nameservers(in: "nameserver\t8.8.8.8\nnameserver 2001:db8::1 \n#nameserver 1.1.1.1\n") == ["8.8.8.8", "2001:db8::1"])
    }

    @Test("status shows how a sandbox is joined to the host, on or off")
    func statusLine() {
        var status = StatusResponse(
            id: "pid/451/eth0", isDefault: false, interface: "eth0", namespace: "pid/451", ifb: "lc-eth0", active: false,
            profile: nil, since: "2026-11-24T22:23:09Z", exemptions: ["tcp/22"]
        )
        status.sandbox = SandboxDocument(address: "10.254.0.2", gateway: "10.254.0.1", hostInterface: "lcsb0")
        #expect(Format.status(status) == """
            pid/451/eth0: off (since 2026-11-24T22:23:09Z)
            sandbox: 10.254.0.2 via lcsb0 (10.254.0.1), NAT through the host
            exempt: tcp/22
            """)
        status.sandbox = nil
        #expect(!Format.status(status).contains("sandbox"))
    }

    @Test("status shows the addresses a host name's condition matches, after its first line")
    func addressesLine() {
        var status = StatusResponse(
            id: "eth0@api.example.com:443", isDefault: false, interface: "eth0", peer: "api.example.com:443", ifb: "lc-eth0", active: true,
            profile: nil, since: "2026-11-25T10:02:11Z", exemptions: ["tcp/22"]
        )
        status.addresses = ["203.0.113.5", "2001:db8::5"]
        #expect(Format.status(status) == """
            eth0@api.example.com:443: off (since 2026-11-25T10:02:11Z)
            addresses: 203.0.113.5, 2001:db8::5
            exempt: tcp/22
            """)
    }
}
