import Glibc

/// Network-order bytes of an IPv4 or IPv6 address, or `nil` when `text` is neither.
public func parseIPAddress(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 {
        return withUnsafeBytes(of: &v4) { Array($0) }
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 {
        return withUnsafeBytes(of: &v6) { Array($0) }
    }
    return nil
}

/// Whether a 4- or 16-byte address is this machine's own loopback: within `127.0.0.0/8`, or `::1`.
public func isLoopbackAddress(_ bytes: [UInt8]) -> Bool {
    bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
}

/// The canonical text of a 4- or 16-byte address.
public func formatIPAddress(_ bytes: [UInt8]) -> String {
    let family = bytes.count == 4 ? AF_INET : AF_INET6
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let written = bytes.withUnsafeBytes { raw in
        inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
    }
    guard written != nil else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
