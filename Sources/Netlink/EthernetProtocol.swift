/// The link-layer protocol a tc filter applies to (`ETH_P_*`, host byte order).
public struct EthernetProtocol: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16

    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    public static let ipv4 = EthernetProtocol(rawValue: 0x0800)
    public static let ipv6 = EthernetProtocol(rawValue: 0x86DD)
    public static let all = EthernetProtocol(rawValue: 0x0003)

    public var description: String {
        switch self {
        case .ipv4: return "ip"
        case .ipv6: return "ipv6"
        case .all: return "all"
        default: return "0x" + String(rawValue, radix: 16)
        }
    }
}
