import IPAddressText

/// Where sandbox number `index` sits: the names of its devices and NAT table, and its /30 in
/// 10.254.0.0/16 (the host end `.1`, the sandbox's `eth0` `.2`). Pure: a number in, names and
/// addresses out, the same in every daemon, so that a restarted one finds what an earlier made.
public struct SandboxAddressing: Hashable, Sendable, Codable {
    public var index: UInt16

    /// 16384 /30 networks fit into 10.254.0.0/16.
    public static let maximumIndex: UInt16 = 16383
    public static let network: [UInt8] = [10, 254, 0, 0]
    public static let networkPrefixLength = 16
    public static let prefixLength = 30
    /// The device inside the sandbox, under the name programs expect to find.
    public static let sandboxInterface = "eth0"
    static let hostInterfacePrefix = "lcsb"
    static let tablePrefix = "linkcond_sandbox_"

    public init(index: UInt16) {
        precondition(index <= Self.maximumIndex, "sandbox index \(index) out of range")
        self.index = index
    }

    /// The host's end of the pair, in the daemon's network namespace (`lcsb12`).
    public var hostInterface: String { Self.hostInterfacePrefix + String(index) }
    /// The nft table that masquerades this sandbox's traffic (`linkcond_sandbox_12`).
    public var natTable: String { Self.tablePrefix + String(index) }

    /// The first address of this sandbox's /30.
    public var subnet: [UInt8] {
        let offset = Int(index) * 4
        return [Self.network[0], Self.network[1], UInt8(offset >> 8), UInt8(offset & 0xFF)]
    }

    public var hostAddress: [UInt8] { address(plus: 1) }
    public var sandboxAddress: [UInt8] { address(plus: 2) }

    private func address(plus host: UInt8) -> [UInt8] {
        var bytes = subnet
        bytes[3] |= host
        return bytes
    }

    public var subnetText: String { "\(formatIPAddress(subnet))/\(Self.prefixLength)" }
    public var hostAddressText: String { formatIPAddress(hostAddress) }
    public var sandboxAddressText: String { formatIPAddress(sandboxAddress) }

    /// The nft commands that make this sandbox's table: what leaves the sandbox for anywhere
    /// but the sandbox itself goes out with the host's address, as from a home router.
    /// The conntrack mark of this sandbox's flows (`0x6c730000` and its number): a handover
    /// deletes the entries with it, and each flow's next packet gets a new mapping.
    public var connectionMark: UInt32 { 0x6C73_0000 | UInt32(index) }

    /// Masquerades the sandbox's flows, each marked as the sandbox's, on a random port: a flow
    /// translated anew after a handover comes from another port, as after a real one.
    public var natRuleset: String {
        """
        add table ip \(natTable)
        add chain ip \(natTable) postrouting { type nat hook postrouting priority srcnat; policy accept; }
        add rule ip \(natTable) postrouting ip saddr \(subnetText) ip daddr != \(subnetText) ct mark set 0x\(String(connectionMark, radix: 16)) masquerade random

        """
    }

    /// The nft command that removes this sandbox's table, rules and all.
    public var natRemoval: String { "delete table ip \(natTable)\n" }
}
