import Glibc

/// The kernel's drop monitor (generic netlink's `NET_DM` family) in its packet mode: each packet
/// the kernel frees as dropped, with the kernel's reason, the time it was dropped and its bytes
/// from the link-layer header on. One monitor serves the whole machine and speaks only to the
/// first network namespace (a socket elsewhere finds no such family): `open()` enters it when
/// linkcondd runs in another. Its alerts go to every socket subscribed to its `events` group.
///
/// Spoken in netlink's fixed structures, as `NetfilterSocket` speaks nfnetlink: a few messages
/// do not need libnl-genl.
public final class DropMonitorSocket {
    /// One dropped packet, as the monitor reports it.
    public struct Alert: Equatable, Sendable {
        /// When the kernel dropped it (CLOCK_REALTIME, nanoseconds).
        public var nanoseconds: UInt64
        /// The kernel's drop reason (`QDISC_DROP`, `NETFILTER_DROP`, …); `nil` before Linux 5.18.
        public var reason: String?
        /// Where in the kernel it was freed (`__dev_queue_xmit+0x…`).
        public var symbol: String?
        /// The packet's length when it was dropped.
        public var length: UInt32
        /// Its bytes from the link-layer header, as many as the monitor copies.
        public var payload: [UInt8]
    }

    public let descriptor: Int32
    private let family: UInt16
    private let eventsGroup: UInt32
    /// One datagram: an alert holds up to 64 KiB of packet and a few hundred bytes of attributes.
    private var buffer = [UInt8](repeating: 0, count: 68 * 1024)

    static let genericNetlink: Int32 = 16  // NETLINK_GENERIC
    static let controller: UInt16 = 0x10  // GENL_ID_CTRL
    static let familyName = "NET_DM"

    /// The monitor's commands and attributes (uapi linux/net_dropmon.h).
    enum Command: UInt8 {
        case configure = 2, start = 3, stop = 4, packetAlert = 5
    }

    enum Attribute: UInt16 {
        case alertMode = 1, symbol = 3, timestamp = 5, payload = 7, truncateLength = 9, originalLength = 10, queueLength = 11
        case softwareDrops = 20, reason = 23
    }

    /// A socket to the monitor from the daemon's namespace or, when the monitor is not found
    /// there (the daemon runs in another), from the first one's (`/proc/1/ns/net`).
    public static func open() throws(NetlinkError) -> DropMonitorSocket {
        do {
            return try DropMonitorSocket(in: nil)
        } catch where error.errno == ENOENT {
            return try DropMonitorSocket(in: NetworkNamespaceFile(path: "/proc/1/ns/net"))
        }
    }

    /// Opens a socket to the monitor in the namespace `file` (the daemon's own when `nil`),
    /// finding its family's number and its group; loads the kernel's module when needed.
    public init(in file: NetworkNamespaceFile?) throws(NetlinkError) {
        let operation = "open the kernel's drop monitor"
        // An alert holds up to 64 KiB of packet: room for 64 of them.
        let descriptor = try RawNetlinkSocket.open(protocolNumber: Self.genericNetlink, in: file, receiveBuffer: 4 << 20, operation)
        do throws(NetlinkError) {
            try Self.send(descriptor, type: Self.controller, command: 3 /* CTRL_CMD_GETFAMILY */, attributes: NetfilterSocket.attribute(2 /* CTRL_ATTR_FAMILY_NAME */, Array(Self.familyName.utf8) + [0]), operation)
            var reply = [UInt8](repeating: 0, count: 16 * 1024)
            let count = try Self.receive(descriptor, into: &reply, waiting: true, operation)
            guard let (family, group) = try Self.familyAndGroup(inReply: reply[..<count], operation) else {
                throw NetlinkError(code: .other, operation: operation, errno: EPROTO, reason: "the kernel's answer named no \(Self.familyName) family and events group")
            }
            self.family = family
            self.eventsGroup = group
        } catch {
            close(descriptor)
            if error.errno == ENOENT {
                throw NetlinkError(code: .notFound, operation: operation, errno: ENOENT, reason: "this kernel has no drop monitor (CONFIG_NET_DROP_MONITOR, module drop_monitor)")
            }
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Sets the monitor to report each dropped packet whole up to `truncateLength` bytes (0: up
    /// to 64 KiB), at most `queueLength` waiting per CPU. Refused (EBUSY) while it runs.
    public func configureForPackets(truncateLength: UInt32, queueLength: UInt32) throws(NetlinkError) {
        try command(.configure, attributes: NetfilterSocket.attribute(Attribute.alertMode.rawValue, [1 /* NET_DM_ALERT_MODE_PACKET */])
            + NetfilterSocket.attribute(Attribute.truncateLength.rawValue, Self.hostOrder(truncateLength))
            + NetfilterSocket.attribute(Attribute.queueLength.rawValue, Self.hostOrder(queueLength)), "configure the kernel's drop monitor")
    }

    /// Starts the monitor on the packets software drops (EAGAIN when it runs already).
    public func start() throws(NetlinkError) {
        try command(.start, attributes: NetfilterSocket.attribute(Attribute.softwareDrops.rawValue, []), "start the kernel's drop monitor")
    }

    public func stop() throws(NetlinkError) {
        try command(.stop, attributes: NetfilterSocket.attribute(Attribute.softwareDrops.rawValue, []), "stop the kernel's drop monitor")
    }

    /// From now on this socket receives the monitor's alerts.
    public func subscribe() throws(NetlinkError) {
        var group = Int32(bitPattern: eventsGroup)
        guard setsockopt(descriptor, 270 /* SOL_NETLINK */, 1 /* NETLINK_ADD_MEMBERSHIP */, &group, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let error = errno
            throw NetlinkError(code: .other, operation: "listen to the kernel's drop monitor", errno: error, reason: String(cString: strerror(error)))
        }
    }

    /// The alerts waiting, at most `limit` datagrams of them, without blocking; and whether the
    /// kernel lost some because the socket's buffer was full (ENOBUFS).
    public func alerts(upTo limit: Int) throws(NetlinkError) -> (alerts: [Alert], overran: Bool) {
        var alerts: [Alert] = []
        var overran = false
        for _ in 0..<limit {
            do {
                let count = try Self.receive(descriptor, into: &buffer, waiting: false, "read the kernel's drop monitor")
                if count == 0 { break }
                alerts += Self.alerts(inMessages: buffer[..<count], family: family)
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                break
            } catch where error.errno == ENOBUFS {
                overran = true
            }
        }
        return (alerts, overran)
    }

    private func command(_ command: Command, attributes: [UInt8], _ operation: String) throws(NetlinkError) {
        try Self.send(descriptor, type: family, command: command.rawValue, attributes: attributes, acknowledged: true, operation)
        var reply = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try Self.receive(descriptor, into: &reply, waiting: true, operation)
            // NLMSG_ERROR, its code after the header: 0 is the acknowledgement.
            guard count >= 20, NetfilterSocket.hostOrder16(reply[...], 4) == 2 else { continue }
            let code = NetfilterSocket.errorCode(reply[...], 16)
            guard code == 0 else {
                let reason = switch code {
                case EBUSY, EAGAIN: "another program (dropwatch?) runs the kernel's drop monitor"
                default: String(cString: strerror(code))
                }
                throw NetlinkError(code: code == EPERM ? .notPermitted : .other, operation: operation, errno: code, reason: reason)
            }
            return
        }
    }

    private static func send(
        _ descriptor: Int32, type: UInt16, command: UInt8, attributes: [UInt8], acknowledged: Bool = false, _ operation: String
    ) throws(NetlinkError) {
        let length = UInt32(16 + 4 + attributes.count)
        let flags: UInt16 = 0x1 | (acknowledged ? 0x4 : 0)  // NLM_F_REQUEST, NLM_F_ACK
        var bytes = hostOrder(length)
        bytes += [UInt8(type & 0xFF), UInt8(type >> 8), UInt8(flags & 0xFF), UInt8(flags >> 8)]
        bytes += [0, 0, 0, 0, 0, 0, 0, 0]  // sequence, port id
        bytes += [command, 2, 0, 0]  // genlmsghdr: command, version, reserved
        bytes += attributes
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else {
            let error = errno
            throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
        }
    }

    private static func receive(_ descriptor: Int32, into buffer: inout [UInt8], waiting: Bool, _ operation: String) throws(NetlinkError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, waiting ? 0 : Int32(MSG_DONTWAIT)) }
            if count >= 0 { return count }
            let error = errno
            guard error == EINTR else {
                throw NetlinkError(code: .other, operation: operation, errno: error, reason: String(cString: strerror(error)))
            }
        }
    }

    static func hostOrder(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }
}

extension DropMonitorSocket {
    /// The family's number and its `events` group's, from the controller's answer to
    /// CTRL_CMD_GETFAMILY; `nil` when the answer has neither. Throws the kernel's refusal.
    package static func familyAndGroup(inReply bytes: ArraySlice<UInt8>, _ operation: String) throws(NetlinkError) -> (UInt16, UInt32)? {
        var offset = bytes.startIndex
        while offset + 20 <= bytes.endIndex {
            let length = Int(NetfilterSocket.hostOrder32(bytes, offset))
            guard length >= 20, offset + length <= bytes.endIndex else { return nil }
            let type = NetfilterSocket.hostOrder16(bytes, offset + 4)
            if type == 2 {  // NLMSG_ERROR
                let code = NetfilterSocket.errorCode(bytes, offset + 16)
                if code != 0 {
                    throw NetlinkError(code: code == EPERM ? .notPermitted : .other, operation: operation, errno: code, reason: String(cString: strerror(code)))
                }
            } else if type == controller {
                let attributes = bytes[(offset + 20)..<(offset + length)]
                guard let family = NetfilterSocket.attribute(1, in: attributes).flatMap({ hostOrder16($0.value) }),  // CTRL_ATTR_FAMILY_ID
                      let groups = NetfilterSocket.attribute(7, in: attributes)?.value else { return nil }  // CTRL_ATTR_MCAST_GROUPS
                for group in nestedAttributes(groups) {
                    let name = NetfilterSocket.attribute(1, in: group).map { String(decoding: $0.value.prefix { $0 != 0 }, as: UTF8.self) }
                    if name == "events", let id = NetfilterSocket.attribute(2, in: group).flatMap({ hostOrder32($0.value) }) {
                        return (family, id)
                    }
                }
                return nil
            }
            offset += (length + 3) & ~3
        }
        return nil
    }

    /// The packet alerts among one read's messages (others are skipped), each bounded by its
    /// message: a length that runs past the bytes read ends the read.
    package static func alerts(inMessages bytes: ArraySlice<UInt8>, family: UInt16) -> [Alert] {
        var alerts: [Alert] = []
        var offset = bytes.startIndex
        while offset + 20 <= bytes.endIndex {
            let length = Int(NetfilterSocket.hostOrder32(bytes, offset))
            guard length >= 20, offset + length <= bytes.endIndex else { break }
            if NetfilterSocket.hostOrder16(bytes, offset + 4) == family, bytes[offset + 16] == Command.packetAlert.rawValue,
               let alert = alert(attributes: bytes[(offset + 20)..<(offset + length)]) {
                alerts.append(alert)
            }
            offset += (length + 3) & ~3
        }
        return alerts
    }

    /// One alert's attributes; `nil` without a payload or a time (a summary-mode alert).
    static func alert(attributes: ArraySlice<UInt8>) -> Alert? {
        func text(_ kind: Attribute) -> String? {
            NetfilterSocket.attribute(kind.rawValue, in: attributes).map { String(decoding: $0.value.prefix { $0 != 0 }, as: UTF8.self) }
        }
        guard let payload = NetfilterSocket.attribute(Attribute.payload.rawValue, in: attributes)?.value,
              let time = NetfilterSocket.attribute(Attribute.timestamp.rawValue, in: attributes).flatMap({ hostOrder64($0.value) }) else { return nil }
        let length = NetfilterSocket.attribute(Attribute.originalLength.rawValue, in: attributes).flatMap { hostOrder32($0.value) }
        return Alert(nanoseconds: time, reason: text(.reason), symbol: text(.symbol), length: max(length ?? 0, UInt32(payload.count)), payload: Array(payload))
    }

    /// The attributes nested in `bytes`, each one's value.
    static func nestedAttributes(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var values: [ArraySlice<UInt8>] = []
        var offset = bytes.startIndex
        while offset + 4 <= bytes.endIndex {
            let length = Int(NetfilterSocket.hostOrder16(bytes, offset))
            guard length >= 4, offset + length <= bytes.endIndex else { break }
            values.append(bytes[(offset + 4)..<(offset + length)])
            offset = min(offset + ((length + 3) & ~3), bytes.endIndex)
        }
        return values
    }

    static func hostOrder16(_ value: ArraySlice<UInt8>) -> UInt16? {
        value.count == 2 ? NetfilterSocket.hostOrder16(value, value.startIndex) : nil
    }

    static func hostOrder32(_ value: ArraySlice<UInt8>) -> UInt32? {
        value.count == 4 ? NetfilterSocket.hostOrder32(value, value.startIndex) : nil
    }

    static func hostOrder64(_ value: ArraySlice<UInt8>) -> UInt64? {
        value.count == 8 ? UInt64(NetfilterSocket.hostOrder32(value, value.startIndex)) | UInt64(NetfilterSocket.hostOrder32(value, value.startIndex + 4)) << 32 : nil
    }
}
