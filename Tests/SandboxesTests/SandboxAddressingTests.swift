@testable import Sandboxes
import Testing

@Suite("Where each sandbox sits")
struct SandboxAddressingTests {
    @Test("Sandbox n has the nth /30 of 10.254.0.0/16: the host's end .1, the sandbox's .2", arguments: [
        (UInt16(0), "10.254.0.0/30", "10.254.0.1", "10.254.0.2"),
        (63, "10.254.0.252/30", "10.254.0.253", "10.254.0.254"),
        (64, "10.254.1.0/30", "10.254.1.1", "10.254.1.2"),
        (16383, "10.254.255.252/30", "10.254.255.253", "10.254.255.254"),
    ])
    func addresses(index: UInt16, subnet: String, host: String, sandbox: String) {
        let addressing = SandboxAddressing(index: index)
        #expect(addressing.subnetText == subnet)
        #expect(addressing.hostAddressText == host)
        #expect(addressing.sandboxAddressText == sandbox)
    }

    @Test("No two sandboxes share a network, and every name fits the kernel's 15 bytes")
    func distinct() {
        let all = (0...SandboxAddressing.maximumIndex).map(SandboxAddressing.init(index:))
        #expect(Set(all.map(\.subnet)).count == all.count)
        #expect(Set(all.map(\.hostInterface)).count == all.count)
        #expect(all.allSatisfy { $0.hostInterface.utf8.count <= 15 })
    }

    @Test("The NAT table is the sandbox's own: named after it, masquerading only its network")
    func natRules() {
        let addressing = SandboxAddressing(index: 12)
        #expect(addressing.natTable == "linkcond_sandbox_12")
        #expect(addressing.natRuleset.contains("add table ip linkcond_sandbox_12"))
        #expect(addressing.natRuleset.contains("ip saddr 10.254.0.48/30 ip daddr != 10.254.0.48/30 ct mark set 0x6c73000c masquerade random"))
        #expect(addressing.connectionMark == 0x6C73_000C)
        #expect(addressing.natRemoval == "delete table ip linkcond_sandbox_12\n")
    }
}
