import Netlink

/// u32 keys for the header fields linkcond classifies on, with offsets from the network header.
///
/// IPv4 keys assume a 20-byte header (`0x45` on byte 0 makes that exact) and match only first
/// fragments, the only ones that carry ports. IPv6 keys assume no extension headers.
enum PacketMatch {
    enum Direction { case source, destination }

    // MARK: IPv4

    static let ipv4WithoutOptions = U32Key(offset: 0, value: 0x4500_0000, mask: 0xFF00_0000)
    static let ipv4FirstFragment = U32Key(offset: 4, value: 0, mask: 0x0000_1FFF)

    static func ipv4Protocol(_ number: UInt8) -> U32Key {
        U32Key(offset: 8, value: UInt32(number) << 16, mask: 0x00FF_0000)
    }

    /// A TCP or UDP port over IPv4.
    static func ipv4Port(_ port: UInt16, transport: UInt8, _ direction: Direction) -> [U32Key] {
        [ipv4WithoutOptions, ipv4FirstFragment, ipv4Protocol(transport), portKey(port, offset: 20, direction)]
    }

    static func ipv4Network(_ network: IPNetwork, _ direction: Direction) -> [U32Key] {
        addressKeys(network, offset: direction == .source ? 12 : 16)
    }

    // MARK: IPv6

    static func ipv6NextHeader(_ number: UInt8) -> U32Key {
        U32Key(offset: 4, value: UInt32(number) << 8, mask: 0x0000_FF00)
    }

    /// A TCP or UDP port over IPv6.
    static func ipv6Port(_ port: UInt16, transport: UInt8, _ direction: Direction) -> [U32Key] {
        [ipv6NextHeader(transport), portKey(port, offset: 40, direction)]
    }

    static func ipv6Network(_ network: IPNetwork, _ direction: Direction) -> [U32Key] {
        addressKeys(network, offset: direction == .source ? 8 : 24)
    }

    /// ICMPv6 types 132-135 (router and neighbour solicitation and advertisement among them) and
    /// 136-137 (neighbour advertisement, redirect): IPv6's ARP, which must never be dropped.
    static let neighbourDiscovery: [[U32Key]] = [
        [ipv6NextHeader(58), U32Key(offset: 40, value: 0x8400_0000, mask: 0xFC00_0000)],
        [ipv6NextHeader(58), U32Key(offset: 40, value: 0x8800_0000, mask: 0xFE00_0000)],
    ]

    // MARK: Shared

    static func portKey(_ port: UInt16, offset: Int32, _ direction: Direction) -> U32Key {
        switch direction {
        case .source: return U32Key(offset: offset, value: UInt32(port) << 16, mask: 0xFFFF_0000)
        case .destination: return U32Key(offset: offset, value: UInt32(port), mask: 0x0000_FFFF)
        }
    }

    /// One key per 32-bit word the prefix touches; a /0 network matches everything (no keys).
    static func addressKeys(_ network: IPNetwork, offset: Int32) -> [U32Key] {
        stride(from: 0, to: network.address.count, by: 4).compactMap { start in
            let bitsInWord = max(0, min(32, network.prefixLength - start * 8))
            guard bitsInWord > 0 else { return nil }
            let mask: UInt32 = bitsInWord == 32 ? .max : ~(UInt32.max >> UInt32(bitsInWord))
            let value = network.address[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return U32Key(offset: offset + Int32(start), value: value, mask: mask)
        }
    }
}
