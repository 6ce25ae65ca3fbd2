import Glibc

/// One address of a network interface, with its prefix length, as `getifaddrs` lists it.
public struct InterfaceAddress: Hashable, Sendable {
    /// 4 bytes for IPv4, 16 for IPv6, in network order.
    public var bytes: [UInt8]
    public var prefixLength: Int

    public init(bytes: [UInt8], prefixLength: Int) {
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// Whether this is an IPv6 link-local address (fe80::/10), which every interface has.
    public var isLinkLocal: Bool { bytes.count == 16 && bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 }

    /// The IPv4 and IPv6 addresses of `interface` in this process's network namespace; none
    /// when it has none or does not exist.
    public static func of(_ interface: String) -> [InterfaceAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [InterfaceAddress] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let name = entry.pointee.ifa_name, String(cString: name) == interface, let address = entry.pointee.ifa_addr else { continue }
            let mask = entry.pointee.ifa_netmask
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                found.append(InterfaceAddress(bytes: ipv4Bytes(address), prefixLength: mask.map { prefixLength(ipv4Bytes($0)) } ?? 32))
            case AF_INET6:
                found.append(InterfaceAddress(bytes: ipv6Bytes(address), prefixLength: mask.map { prefixLength(ipv6Bytes($0)) } ?? 128))
            default:
                continue
            }
        }
        return found
    }

    private static func ipv4Bytes(_ address: UnsafeMutablePointer<sockaddr>) -> [UInt8] {
        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
    }

    private static func ipv6Bytes(_ address: UnsafeMutablePointer<sockaddr>) -> [UInt8] {
        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) } }
    }

    private static func prefixLength(_ mask: [UInt8]) -> Int { mask.reduce(0) { $0 + $1.nonzeroBitCount } }
}
