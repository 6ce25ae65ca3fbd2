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
        descriptor = try RawNetlinkSocket.open(protocolNumber: 12 /* NETLINK_NETFILTER */, in: file, receiveBuffer: 1 << 20, "open a netfilter socket")
        var on: Int32 = 1
        _ = setsockopt(descriptor, 270 /* SOL_NETLINK */, 5 /* NETLINK_NO_ENOBUFS */, &on, socklen_t(MemoryLayout<Int32>.size))
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
            let count = try receive(into: &reply, operation)
            // NLMSG_ERROR, its code after the header: 0 is the acknowledgement.
            guard count >= 20, Self.hostOrder16(reply[...], 4) == 2 else { continue }
            let code = Self.errorCode(reply[...], 16)
            guard code == 0 else {
                throw NetlinkError(
                    code: code == EPERM ? .notPermitted : .other, operation: operation, errno: code,
                    reason: code == EBUSY ? "another program holds it" : String(cString: strerror(code))
                )
            }
            return
        }
    }

    /// Reads one datagram of messages into `buffer`; its length.
    func receive(into buffer: inout [UInt8], _ operation: String) throws(NetlinkError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            let error = errno
            guard error == EINTR else {
                throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
            }
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

extension NetfilterSocket {
    /// Deletes every conntrack entry of this namespace whose original source is one of
    /// `sources` (4- or 16-byte addresses): the flows those hosts began go on, but each one's next
    /// packet is tracked (and translated) anew. Returns how many went. The kernel's flush filters
    /// by mark alone, so the table is listed and each entry deleted by its original tuple.
    public func deleteConnections(from sources: Set<[UInt8]>) throws(NetlinkError) -> Int {
        try delete(connections(from: sources))
    }

    /// Deletes the entries `tuples` name, each only if it is still the entry listed (its CTA_ID);
    /// returns how many went.
    package func delete(_ tuples: [ConnectionTuple]) throws(NetlinkError) -> Int {
        var deleted = 0
        for entry in tuples {
            do {
                // IPCTNL_MSG_CT_DELETE, the entry's own CTA_TUPLE_ORIG as the kernel gave it, and its
                // CTA_ID: an entry made since the listing with the same tuple (the flow's next
                // packet, translated anew already) is not this one, and stays.
                try send(.conntrack, 2, family: entry.family, attributes: entry.originalTuple + entry.identifier, acknowledged: true, "delete a connection")
                deleted += 1
            } catch where error.errno == ENOENT {
                // Ended on its own since the listing.
            }
        }
        return deleted
    }

    /// One conntrack entry as a listing gives it: its layer-3 family, its original direction's
    /// tuple (the whole CTA_TUPLE_ORIG attribute) with its addresses, protocol and ports, and
    /// where the far end sends its answers (the reply direction's destination: the source after
    /// any NAT).
    package struct ConnectionTuple: Equatable {
        package var family: UInt8
        package var originalTuple: [UInt8]
        package var source: [UInt8]
        package var destination: [UInt8] = []
        package var protocolNumber: UInt8 = 0
        package var sourcePort: UInt16 = 0
        package var destinationPort: UInt16 = 0
        package var replyDestination: [UInt8] = []
        package var replyDestinationPort: UInt16 = 0
        /// TCP's state as conntrack tracks it (3: established); `nil` for another protocol.
        package var tcpState: UInt8?
        /// The entry's CTA_ID attribute, whole (empty when the listing had none): which entry of
        /// that tuple it is.
        package var identifier: [UInt8] = []

        /// Whether the far end answers the original source itself: no NAT changed the flow.
        package var isUntranslated: Bool {
            replyDestination == source && replyDestinationPort == sourcePort
        }
    }

    /// Sets the mark of the conntrack entry `tuple` names (IPCTNL_MSG_CT_NEW on an entry that is
    /// there changes it). An entry gone since its listing is fine.
    package func mark(_ tuple: ConnectionTuple, _ mark: UInt32) throws(NetlinkError) {
        do {
            try send(.conntrack, 0, family: tuple.family, attributes: tuple.originalTuple + tuple.identifier + Self.attribute(8, Self.bigEndian(mark)), acknowledged: true, "mark a connection")
        } catch where error.errno == ENOENT {
        }
    }

    /// The conntrack entries of this namespace whose original source is one of `sources`.
    package func connections(from sources: Set<[UInt8]>) throws(NetlinkError) -> [ConnectionTuple] {
        try connectionTuples().filter { sources.contains($0.source) }
    }

    /// Every conntrack entry of this namespace (IPCTNL_MSG_CT_GET, dumped).
    func connectionTuples() throws(NetlinkError) -> [ConnectionTuple] {
        let operation = "list the connections"
        let kind = Subsystem.conntrack.rawValue << 8 | 1
        let flags: UInt16 = 0x1 | 0x300  // NLM_F_REQUEST, NLM_F_DUMP
        var request: [UInt8] = [20, 0, 0, 0, UInt8(kind & 0xFF), UInt8(kind >> 8), UInt8(flags & 0xFF), UInt8(flags >> 8)]
        request += [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  // sequence, port id; nfgenmsg: every family, version 0
        let sent = request.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else {
            let error = errno
            throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
        }
        var tuples: [ConnectionTuple] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try receive(into: &buffer, operation)
            let (found, done) = try Self.connectionTuples(inMessages: buffer[..<count], operation)
            tuples += found
            if done || count == 0 { return tuples }
        }
    }

    /// The entries in one read of a conntrack listing, and whether the listing ended (NLMSG_DONE).
    /// Bounded by the bytes read: a length that runs past them ends the read.
    package static func connectionTuples(inMessages bytes: ArraySlice<UInt8>, _ operation: String) throws(NetlinkError) -> ([ConnectionTuple], Bool) {
        var tuples: [ConnectionTuple] = []
        var offset = bytes.startIndex
        while offset + 16 <= bytes.endIndex {
            let length = Int(hostOrder32(bytes, offset))
            let type = hostOrder16(bytes, offset + 4)
            guard length >= 16, offset + length <= bytes.endIndex else { break }
            switch type {
            case 3:  // NLMSG_DONE
                return (tuples, true)
            case 2:  // NLMSG_ERROR
                let code = length >= 20 ? errorCode(bytes, offset + 16) : EINVAL
                if code != 0 {
                    throw NetlinkError(code: code == EPERM ? .notPermitted : .other, operation: operation, errno: code, reason: String(cString: strerror(code)))
                }
            default:
                if length >= 20, let tuple = connectionTuple(family: bytes[offset + 16], attributes: bytes[(offset + 20)..<(offset + length)]) {
                    tuples.append(tuple)
                }
            }
            offset += (length + 3) & ~3
        }
        return (tuples, false)
    }

    /// The original tuple among one entry's attributes, and the source address inside it.
    static func connectionTuple(family: UInt8, attributes: ArraySlice<UInt8>) -> ConnectionTuple? {
        guard let original = attribute(1, in: attributes),  // CTA_TUPLE_ORIG
              let addresses = attribute(1, in: original.value),  // CTA_TUPLE_IP
              let source = attribute(1, in: addresses.value) ?? attribute(3, in: addresses.value),  // CTA_IP_V4_SRC, CTA_IP_V6_SRC
              source.value.count == 4 || source.value.count == 16 else { return nil }
        var tuple = ConnectionTuple(family: family, originalTuple: Array(original.whole), source: Array(source.value))
        tuple.destination = (attribute(2, in: addresses.value) ?? attribute(4, in: addresses.value)).map { Array($0.value) } ?? []
        if let ports = attribute(2, in: original.value) {  // CTA_TUPLE_PROTO
            tuple.protocolNumber = attribute(1, in: ports.value)?.value.first ?? 0
            tuple.sourcePort = attribute(2, in: ports.value).flatMap { bigEndian16($0.value) } ?? 0
            tuple.destinationPort = attribute(3, in: ports.value).flatMap { bigEndian16($0.value) } ?? 0
        }
        if let reply = attribute(2, in: attributes) {  // CTA_TUPLE_REPLY
            tuple.replyDestination = attribute(1, in: reply.value).flatMap { attribute(2, in: $0.value) ?? attribute(4, in: $0.value) }.map { Array($0.value) } ?? []
            tuple.replyDestinationPort = attribute(2, in: reply.value).flatMap { attribute(3, in: $0.value) }.flatMap { bigEndian16($0.value) } ?? 0
        }
        tuple.identifier = attribute(12, in: attributes).map { Array($0.whole) } ?? []  // CTA_ID
        // CTA_PROTOINFO, CTA_PROTOINFO_TCP, CTA_PROTOINFO_TCP_STATE.
        tuple.tcpState = attribute(4, in: attributes).flatMap { attribute(1, in: $0.value) }.flatMap { attribute(1, in: $0.value) }?.value.first
        return tuple
    }

    /// The errno of an NLMSG_ERROR, whose header holds it negated; wrapping, since a hostile
    /// message may hold Int32.min, which has no positive counterpart.
    static func errorCode(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> Int32 {
        0 &- Int32(bitPattern: hostOrder32(bytes, offset))
    }

    static func bigEndian16(_ bytes: ArraySlice<UInt8>) -> UInt16? {
        bytes.count == 2 ? UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1]) : nil
    }

    /// The first attribute of `kind` (nesting flags aside) among `attributes`: its value, and the
    /// whole attribute with its header and padding as it lies there.
    static func attribute(_ kind: UInt16, in attributes: ArraySlice<UInt8>) -> (value: ArraySlice<UInt8>, whole: ArraySlice<UInt8>)? {
        var offset = attributes.startIndex
        while offset + 4 <= attributes.endIndex {
            let length = Int(hostOrder16(attributes, offset))
            guard length >= 4, offset + length <= attributes.endIndex else { return nil }
            let padded = min(offset + ((length + 3) & ~3), attributes.endIndex)
            if hostOrder16(attributes, offset + 2) & 0x3FFF == kind {
                return (attributes[(offset + 4)..<(offset + length)], attributes[offset..<padded])
            }
            offset = padded
        }
        return nil
    }
}
