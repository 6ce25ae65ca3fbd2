import Glibc

/// Opening a netlink socket of one protocol spoken byte by byte (nfnetlink, generic netlink):
/// made in a namespace (the daemon's own when `nil`), its receive buffer set, bound to a port
/// the kernel picks and no group.
enum RawNetlinkSocket {
    /// The socket's descriptor, which the caller closes.
    static func open(protocolNumber: Int32, in file: NetworkNamespaceFile?, receiveBuffer: Int32, _ operation: String) throws(NetlinkError) -> Int32 {
        func openSocket() -> (Int32, Int32) {
            let descriptor = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), protocolNumber)
            return (descriptor, errno)
        }
        let (descriptor, error) = if let file { try file.whileInside(operation, openSocket) } else { openSocket() }
        guard descriptor >= 0 else {
            throw NetlinkError(code: error == EPERM ? .notPermitted : .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
        }
        var buffer = receiveBuffer
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
        // sockaddr_nl: the family, padding, port id 0 (the kernel picks), no groups.
        let address: [UInt8] = [UInt8(AF_NETLINK), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let bound = address.withUnsafeBytes { bind(descriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard bound == 0 else {
            let error = errno
            close(descriptor)
            throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
        }
        return descriptor
    }
}
