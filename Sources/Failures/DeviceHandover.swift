import IPAddressText
import Shaping

/// A device behind this machine handed over, as from Wi-Fi to LTE: from now on its flows leave
/// through linkcond's own NAT (`masquerade random`, ahead of any NAT of the machine's), and its
/// conntrack entries go, so that each flow's next packet is translated anew: the far end sees it
/// from a new address and port. A UDP flow goes on from there; a TCP connection's next segment
/// is unknown to the far end, whose reset breaks it, as on a real handover. Each handover after
/// the first moves the flows again.
public struct DeviceHandover: Equatable, Sendable {
    /// The device's addresses (4 or 16 bytes, network order).
    public var addresses: [[UInt8]]
    /// The interface the device is behind: what leaves through it again is not translated.
    public var interface: String
    /// `linkcond_handover_<hash>`: one table per device condition, named after it.
    public var table: String

    public init(addresses: [[UInt8]], interface: String, condition: String) {
        self.addresses = addresses
        self.interface = interface
        self.table = Self.tablePrefix + String(ShapingTarget.fnv1a(condition), radix: 16)
    }

    /// The prefix of every handover table, so that leftovers can be found.
    public static let tablePrefix = "linkcond_handover_"

    /// Whether nftables can name the interface: not with a quote or a backslash in its name.
    var isNameable: Bool { !interface.contains("\"") && !interface.contains("\\") }

    /// The table, written whole: created if missing, emptied, filled, in one transaction.
    var commands: String {
        let device = "\"" + interface + "\""
        let rules = addresses.map { address in
            "    \(address.count == 4 ? "ip" : "ip6") saddr \(formatIPAddress(address)) oifname != \(device) masquerade random\n"
        }
        return "table inet \(table)\ndelete table inet \(table)\ntable inet \(table) {\n"
            + "  chain postrouting {\n    type nat hook postrouting priority srcnat - 10; policy accept;\n"
            + rules.joined() + "  }\n}\n"
    }

    var removal: String { "delete table inet \(table)\n" }
}
