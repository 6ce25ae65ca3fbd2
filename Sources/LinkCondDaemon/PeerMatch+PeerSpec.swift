import ControlAPI
import Shaping

extension PeerMatch {
    /// The packets a `--to` names: its network (`*`: any IPv4 and any IPv6 address), and with a
    /// port, the transports that carry it (both, unless one is named).
    init(_ spec: PeerSpec) {
        let networks = spec.address.map { [IPNetwork(address: $0, prefixLength: spec.prefixLength)] } ?? [.anyIPv4, .anyIPv6]
        let transports: [PortExemption.Transport] = switch spec.transport {
        case .tcp: [.tcp]
        case .udp: [.udp]
        case nil: [.tcp, .udp]
        }
        self.init(networks: networks, port: spec.port, transports: transports, text: spec.description, isDevice: spec.isDevice)
    }
}
