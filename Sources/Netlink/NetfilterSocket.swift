import Glibc

/// A netlink socket of netfilter's own family (nfnetlink): the queues of packets handed to user
/// space, and conntrack. Spoken in netlink's fixed structures, a few of them: libnl's bindings of
/// these subsystems would bring a library each for a message or two.
public final class NetfilterSocket {
    public let descriptor: Int32

    /// nfnetlink's subsystems linkcond speaks to.
    public enum Subsystem: UInt16 {
        case conntrack = 1  // NFNL_SUBSYS_CTNETLINK
        case queue = 3  // NFNL_SUBSYS_QUEUE
    }

    /// Opens a socket in the namespace `file` (the daemon's own when `nil`).
    public init(in file: NetworkNamespaceFile?) throws(NetlinkError) {
        func openSocket() -> (Int32, Int32) {
            let descriptor = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 12 /* NETLINK_NETFILTER */)
            return (descriptor, errno)
        }
        let (descriptor, error) = if let file { try file.whileInside("open a netfilter socket", openSocket) } else { openSocket() }
        guard descriptor >= 0 else {
            throw NetlinkError(code: error == EPERM ? .notPermitted : .other, operation: "open a netfilter socket", errno: error, reason: String(cString: strerror(error)))
        }
        self.descriptor = descriptor
        var on: Int32 = 1
        var buffer: Int32 = 1 << 20
        _ = setsockopt(descriptor, 270 /* SOL_NETLINK */, 5 /* NETLINK_NO_ENOBUFS */, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
        // sockaddr_nl: the family, padding, port id 0 (the kernel picks), no groups.
        let address: [UInt8] = [UInt8(AF_NETLINK), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let bound = address.withUnsafeBytes { bind(descriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard bound == 0 else {
            let error = errno
            close(descriptor)
            throw NetlinkError(code: .other, operation: "bind a netfilter socket", errno: error, reason: String(cString: strerror(error)))
        }
    }

    deinit {
        close(descriptor)
    }

    /// Sends one message of `subsystem`, and with `acknowledged` waits for the kernel's answer to
    /// it (nothing else may read the socket meanwhile), throwing what the kernel refused.
    public func send(
        _ subsystem: Subsystem, _ type: UInt16, family: UInt8 = 0, resource: UInt16 = 0, attributes: [UInt8],
        acknowledged: Bool, _ operation: String
    ) throws(NetlinkError) {
        let length = UInt32(16 + 4 + attributes.count)
        let flags: UInt16 = 0x1 | (acknowledged ? 0x4 : 0)  // NLM_F_REQUEST, NLM_F_ACK
        let kind = subsystem.rawValue << 8 | type
        var bytes = [UInt8(length & 0xFF), UInt8((length >> 8) & 0xFF), UInt8((length >> 16) & 0xFF), UInt8(length >> 24)]
        bytes += [UInt8(kind & 0xFF), UInt8(kind >> 8), UInt8(flags & 0xFF), UInt8(flags >> 8)]
        bytes += [0, 0, 0, 0, 0, 0, 0, 0]  // sequence, port id
        bytes += [family, 0, UInt8(resource >> 8), UInt8(resource & 0xFF)]  // nfgenmsg: version 0, resource big-endian
        bytes += attributes
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else {
            let error = errno
            throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
        }
        if acknowledged { try awaitAcknowledgement(operation) }
    }

    private func awaitAcknowledgement(_ operation: String) throws(NetlinkError) {
        var reply = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = reply.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else {
                let error = errno
                if error == EINTR { continue }
                throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
            }
            // NLMSG_ERROR, its code after the header: 0 is the acknowledgement.
            guard count >= 20, Self.hostOrder16(reply[...], 4) == 2 else { continue }
            let code = -Int32(bitPattern: Self.hostOrder32(reply[...], 16))
            guard code == 0 else {
                throw NetlinkError(
                    code: code == EPERM ? .notPermitted : .other, operation: operation, errno: code,
                    reason: code == EBUSY ? "another program holds it" : String(cString: strerror(code))
                )
            }
            return
        }
    }

    /// One netlink attribute, padded to four bytes.
    public static func attribute(_ kind: UInt16, _ value: [UInt8]) -> [UInt8] {
        let length = 4 + value.count
        return [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(kind & 0xFF), UInt8(kind >> 8)] + value
            + [UInt8](repeating: 0, count: (4 - length % 4) % 4)
    }

    /// Netlink's own fields (lengths, types, error codes) are in host order: little-endian here.
    public static func hostOrder16(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    public static func hostOrder32(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt32 {
        UInt32(hostOrder16(bytes, offset)) | UInt32(hostOrder16(bytes, offset + 2)) << 16
    }

    public static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

extension NetfilterSocket {
    /// Deletes every conntrack entry of this namespace whose mark, under `mask`, is `mark`: the
    /// flows go on, but each one's next packet is tracked (and translated) anew.
    public func deleteConnections(markedWith mark: UInt32, mask: UInt32 = 0xFFFF_FFFF) throws(NetlinkError) {
        // IPCTNL_MSG_CT_DELETE without a tuple flushes, filtered by CTA_MARK and CTA_MARK_MASK.
        try send(
            .conntrack, 2, attributes: Self.attribute(8, Self.bigEndian(mark)) + Self.attribute(21, Self.bigEndian(mask)),
            acknowledged: true, "delete the connections marked \(String(mark, radix: 16))"
        )
    }
}
