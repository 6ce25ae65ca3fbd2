import Netlink

/// Flower keys for the traffic linkcond never shapes, and which side of a packet a key reads.
enum PacketMatch {
    enum Direction { case source, destination }

    static func port(_ port: UInt16, _ transport: PortExemption.Transport, _ family: EthernetProtocol, _ direction: Direction) -> FlowerKey {
        var key = FlowerKey(etherType: family, ipProtocol: transport.ipProtocol)
        switch direction {
        case .source: key.sourcePort = port
        case .destination: key.destinationPort = port
        }
        return key
    }

    static func network(_ network: IPNetwork, _ direction: Direction) -> FlowerKey {
        var key = FlowerKey(etherType: network.family == .ipv4 ? .ipv4 : .ipv6)
        let address = FlowerAddress(address: network.address, prefixLength: network.prefixLength)
        switch direction {
        case .source: key.source = address
        case .destination: key.destination = address
        }
        return key
    }

    static func all(_ family: EthernetProtocol) -> FlowerKey {
        FlowerKey(etherType: family)
    }

    /// ICMPv6 types 132-135 (router and neighbour solicitation among them) and 136-137
    /// (neighbour advertisement, redirect), two masked keys: IPv6's ARP, which must never be dropped.
    static let neighbourDiscovery: [FlowerKey] = [(UInt8(0x84), UInt8(0xFC)), (UInt8(0x88), UInt8(0xFE))].map { type, mask in
        var key = FlowerKey(etherType: .ipv6, ipProtocol: 58)
        key.icmpv6Type = (type, mask)
        return key
    }
}
