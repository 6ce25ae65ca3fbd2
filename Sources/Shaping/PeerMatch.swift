import Netlink
import Profiles

/// The packets of a target that one condition shapes: those exchanged with some peers, the
/// way a user names them (`10.0.0.5:443`, `2001:db8::/32`, `*:53/udp`).
///
/// On the uplink that is packets *to* a peer (its address and port as destination), on the
/// downlink packets *from* it (as source). For a device behind a gateway (`isDevice`), the
/// same packets, with the directions the other way round: what leaves the interface towards
/// the device is the device's downlink.
public struct PeerMatch: Hashable, Sendable, CustomStringConvertible {
    /// Where the peers are: one network, or `0.0.0.0/0` and `::/0` for any address.
    public var networks: [IPNetwork]
    /// The peers' port; `nil` for every packet, of any protocol, exchanged with them.
    public var port: UInt16?
    /// With a port: which transports carry it.
    public var transports: [PortExemption.Transport]
    /// How the user wrote it, for logs and status.
    public var text: String
    /// A device behind this machine, whose uplink arrives on the interface.
    public var isDevice: Bool

    public init(networks: [IPNetwork], port: UInt16?, transports: [PortExemption.Transport], text: String, isDevice: Bool = false) {
        self.networks = networks
        self.port = port
        self.transports = port == nil ? [] : transports
        self.text = text
        self.isDevice = isDevice
    }

    /// The conditions of `profile` for packets leaving the interface (`egress`) or arriving.
    func conditions(of profile: Profile, egress: Bool) -> LinkConditions {
        egress != isDevice ? profile.uplink : profile.downlink
    }

    public var description: String { text }

    /// How specific a filter for `network` is: its prefix (IPv4 scaled to IPv6's 128 bits) and
    /// then whether it names a port. Overlapping matches resolve to the more specific one.
    static func specificity(of network: IPNetwork, hasPort: Bool) -> Int {
        let scaledPrefix = network.prefixLength * (network.family == .ipv4 ? 4 : 1)
        return scaledPrefix * 2 + (hasPort ? 1 : 0)
    }

    static let maximumSpecificity = 128 * 2 + 1

    /// Whether a packet could match a filter of each at the same priority, which the kernel
    /// refuses (identical keys) or cannot order: `10.0.0.9:443` and `10.0.0.9:443/tcp`.
    public func overlapsExactly(_ other: PeerMatch) -> Bool {
        let mine = Set(keys(peerAs: .destination).map(\.key))
        return other.keys(peerAs: .destination).contains { mine.contains($0.key) }
    }

    /// The flower keys of this match for one direction: one per network and transport.
    func keys(peerAs direction: PacketMatch.Direction) -> [(key: FlowerKey, specificity: Int)] {
        networks.flatMap { network -> [(key: FlowerKey, specificity: Int)] in
            let address = network.prefixLength == 0 ? nil : FlowerAddress(address: network.address, prefixLength: network.prefixLength)
            let etherType: EthernetProtocol = network.family == .ipv4 ? .ipv4 : .ipv6
            let specificity = Self.specificity(of: network, hasPort: port != nil)
            func key(_ transport: PortExemption.Transport?) -> FlowerKey {
                var key = FlowerKey(etherType: etherType, ipProtocol: transport?.ipProtocol)
                switch direction {
                case .destination:
                    key.destination = address
                    key.destinationPort = port
                case .source:
                    key.source = address
                    key.sourcePort = port
                }
                return key
            }
            guard port != nil else { return [(key(nil), specificity)] }
            return transports.map { (key($0), specificity) }
        }
    }
}

/// A condition with a match, as the planner sees it: its slot on the target (which fixes its
/// class, leaf and filter handles), whom it matches, and its profile.
public struct MatchedCondition: Hashable, Sendable {
    public var slot: UInt16
    public var match: PeerMatch
    public var profile: Profile

    public init(slot: UInt16, match: PeerMatch, profile: Profile) {
        self.slot = slot
        self.match = match
        self.profile = profile
    }
}

extension IPNetwork {
    /// Every IPv4 address and every IPv6 address.
    public static let anyIPv4 = try! IPNetwork(parsing: "0.0.0.0/0")
    public static let anyIPv6 = try! IPNetwork(parsing: "::/0")
}
