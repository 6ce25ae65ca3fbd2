import IPAddressText
import Shaping

/// The flows of a device behind this machine (a gateway device's), which linkcond changes in the
/// gateway's namespace through one table of the device condition's own, `linkcond_device_<hash>`.
///
/// A handover, as from Wi-Fi to LTE: from then on the device's flows leave through linkcond's own
/// NAT (`masquerade random`, ahead of any NAT of the machine's), and its conntrack entries go, so
/// that each flow's next packet is translated anew: the far end sees it from a new address and
/// port. A UDP flow goes on from there; a TCP connection's next segment is unknown to the far
/// end, whose reset breaks it, as on a real handover. Each handover after the first moves the
/// flows again.
///
/// A reset: the device's TCP connections are marked in conntrack (`resetMark`), the table answers
/// each later segment of them with a reset to whichever end sent it, and each end is asked for
/// one at once (`ResetProbe`): both ends learn of it now, with the sequence numbers they expect.
public struct DeviceFlows: Equatable, Sendable {
    /// The device's addresses (4 or 16 bytes, network order).
    public var addresses: [[UInt8]]
    /// The interface the device is behind: what leaves through it again is not translated.
    public var interface: String
    /// `linkcond_device_<hash>`: one table per device condition, named after it.
    public var table: String

    public init(addresses: [[UInt8]], interface: String, condition: String) {
        self.addresses = addresses
        self.interface = interface
        self.table = Self.tablePrefix + String(ShapingTarget.fnv1a(condition), radix: 16)
    }

    /// The prefix of every handover table, so that leftovers can be found.
    public static let tablePrefix = "linkcond_device_"

    /// Whether nftables can name the interface: not with a quote or a backslash in its name.
    var isNameable: Bool { Planner.quotedName(interface) != nil }

    /// The table's NAT chain, written whole in one transaction (the table made if missing), and
    /// its handover chain: a TCP segment of the device's, either way, that begins no connection
    /// yet is new to conntrack (a connection from before the handover, its entry deleted) is
    /// answered with a reset, as the far end of a real handover answers; a datagram to the
    /// device that is new to conntrack (an answer to the old mapping) is lost, as on a real
    /// handover. Without them, a packet from the server that came first would be tracked anew
    /// untranslated, and the flow would live on unmoved.
    var commands: String {
        let device = Planner.quotedName(interface) ?? ""
        let rules = addresses.map { address in
            "add rule inet \(table) postrouting \(Self.family(of: address)) saddr \(formatIPAddress(address)) oifname != \(device) masquerade random\n"
        }
        let resets = addresses.flatMap { address in
            let family = Self.family(of: address)
            return ["saddr", "daddr"].map { side in
                "add rule inet \(table) handover \(family) \(side) \(formatIPAddress(address)) ct state new tcp flags & (fin | syn | rst | ack) != syn reject with tcp reset\n"
            } + ["add rule inet \(table) handover \(family) daddr \(formatIPAddress(address)) ct state new meta l4proto udp drop\n"]
        }
        return "add table inet \(table)\n"
            + "add chain inet \(table) postrouting { type nat hook postrouting priority srcnat - 10; policy accept; }\n"
            + "flush chain inet \(table) postrouting\n" + rules.joined()
            + "add chain inet \(table) handover { type filter hook forward priority filter - 20; policy accept; }\n"
            + "flush chain inet \(table) handover\n" + resets.joined()
    }

    /// nftables' name of an address's family: `ip` for 4 bytes, `ip6` for 16.
    private static func family(of address: [UInt8]) -> String {
        address.count == 4 ? "ip" : "ip6"
    }

    /// The mark a reset puts on the device's connections ("lrst"): the table's reset chain
    /// answers every later segment of them, either way, with a reset.
    public static let resetMark: UInt32 = 0x6C72_7374

    /// The table's reset chain, written whole in one transaction (the table made if missing):
    /// each segment of a connection with `resetMark` is answered with a reset, to whichever end
    /// sent it, with the sequence number that end expects.
    ///
    /// The probes (`probeMark`) are not tracked: as a new flow, each would share its tuple with
    /// the connection it probes, and conntrack would drop it.
    var resetRules: String {
        "add table inet \(table)\n"
            + "add chain inet \(table) forward { type filter hook forward priority filter - 20; policy accept; }\n"
            + "flush chain inet \(table) forward\n"
            + "add rule inet \(table) forward ct mark 0x\(String(Self.resetMark, radix: 16)) meta l4proto tcp reject with tcp reset\n"
            + "add chain inet \(table) output { type filter hook output priority raw; policy accept; }\n"
            + "flush chain inet \(table) output\n"
            + "add rule inet \(table) output meta mark 0x\(String(Self.probeMark, radix: 16)) notrack\n"
    }

    /// The socket mark of a reset's probes ("lrsp").
    public static let probeMark: UInt32 = 0x6C72_7370

    var removal: String { "delete table inet \(table)\n" }
}
