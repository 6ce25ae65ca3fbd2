/// The link-layer protocol a tc filter applies to (`ETH_P_*`, host byte order).
public struct EthernetProtocol: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16

    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    public static let ipv4 = EthernetProtocol(rawValue: 0x0800)
    public static let ipv6 = EthernetProtocol(rawValue: 0x86DD)
    public static let all = EthernetProtocol(rawValue: 0x0003)
    /// VLAN tags: 802.1Q, and 802.1ad's outer tag (QinQ).
    public static let vlan = EthernetProtocol(rawValue: 0x8100)
    public static let qinq = EthernetProtocol(rawValue: 0x88A8)

    public var description: String {
        switch self {
        case .ipv4: return "ip"
        case .ipv6: return "ipv6"
        case .all: return "all"
        case .vlan: return "802.1Q"
        case .qinq: return "802.1ad"
        default: return "0x" + String(rawValue, radix: 16)
        }
    }
}
