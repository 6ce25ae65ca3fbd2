import LinkCondVocabulary
import Shaping

extension PeerMatch {
    /// The packets a `--to` names: its network (`*`: any IPv4 and any IPv6 address; a host
    /// name: each of `hostAddresses`, what it resolved to), and with a port, the transports
    /// that carry it (both, unless one is named).
    init(_ spec: PeerSpec, hostAddresses: [[UInt8]] = []) {
        let networks: [IPNetwork] = if let address = spec.address {
            [IPNetwork(address: address, prefixLength: spec.prefixLength)]
        } else if spec.hostName != nil {
            hostAddresses.map { IPNetwork(address: $0, prefixLength: $0.count * 8) }
        } else {
            [.anyIPv4, .anyIPv6]
        }
        let transports: [PortExemption.Transport] = switch spec.transport {
        case .tcp: [.tcp]
        case .udp: [.udp]
        case nil: [.tcp, .udp]
        }
        self.init(networks: networks, port: spec.port, transports: transports, text: spec.description, isDevice: spec.isDevice)
    }
}
