import Glibc
import Netlink

/// One netfilter queue (nfnetlink_queue) of one network namespace, bound on a netlink socket
/// of that namespace: the packets an nftables `queue` rule hands to it arrive here, and each
/// waits in the kernel until it gets its verdict.
final class NetfilterQueue {
    let number: UInt16
    private let socket: NetfilterSocket
    var descriptor: Int32 { socket.descriptor }

    /// A packet the kernel queued: its id, for the verdict, and its bytes from the IP header on
    /// (as many as `copyBytes`).
    struct Packet {
        var id: UInt32
        var bytes: ArraySlice<UInt8>
    }

    enum Verdict: UInt32 {
        case drop = 0
        case accept = 1
    }

    /// A query's first bytes are all a responder reads: the IP and UDP headers, the DNS header
    /// and one question.
    static let copyBytes: UInt32 = 512
    /// Packets the kernel holds for the queue before it lets more pass unanswered (fail-open).
    static let maximumWaiting: UInt32 = 256

    private static let packetMessage: UInt16 = 0, verdictMessage: UInt16 = 1, configMessage: UInt16 = 2

    /// Opens a socket in the namespace `file` (the daemon's own when `nil`) and binds it to queue
    /// `number`, copying packets and failing open when full. Throws what the kernel said.
    /// Closing the socket (when this goes) unbinds the queue; a rule with `bypass` lets its
    /// packets pass.
    init(number: UInt16, in file: NetworkNamespaceFile?) throws(NetlinkError) {
        self.number = number
        self.socket = try NetfilterSocket(in: file)
        typealias Message = NetfilterSocket
        try socket.send(.queue, Self.configMessage, resource: number, attributes: Message.attribute(1, [1, 0, 0, 0]), acknowledged: true, "bind netfilter queue \(number)")
        try socket.send(
            .queue, Self.configMessage, resource: number,
            attributes: Message.attribute(2, Message.bigEndian(Self.copyBytes) + [2])  // NFQA_CFG_PARAMS: copy packets
                + Message.attribute(3, Message.bigEndian(Self.maximumWaiting))  // NFQA_CFG_QUEUE_MAXLEN
                + Message.attribute(5, Message.bigEndian(1)) + Message.attribute(4, Message.bigEndian(1)),  // NFQA_CFG_FLAGS, _MASK: fail open
            acknowledged: true, "configure netfilter queue \(number)"
        )
    }

    /// Tells the kernel what becomes of packet `id`.
    func decide(_ id: UInt32, _ verdict: Verdict) {
        // NFQA_VERDICT_HDR: verdict, then id, both big-endian.
        let header = NetfilterSocket.attribute(2, NetfilterSocket.bigEndian(verdict.rawValue) + NetfilterSocket.bigEndian(id))
        try? socket.send(.queue, Self.verdictMessage, resource: number, attributes: header, acknowledged: false, "give a verdict")
    }

    /// The packets waiting on the socket now, without blocking: at most `limit` reads.
    func receive(limit: Int = 64, into buffer: inout [UInt8]) -> [Packet] {
        var packets: [Packet] = []
        for _ in 0..<limit {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { break }
            packets += Self.packets(in: buffer[0..<count])
        }
        return packets
    }

    /// The queued packets in a datagram of netlink messages; anything else is skipped.
    static func packets(in bytes: ArraySlice<UInt8>) -> [Packet] {
        var packets: [Packet] = []
        var offset = bytes.startIndex
        while bytes.endIndex - offset >= 16 {
            let length = Int(NetfilterSocket.hostOrder32(bytes, offset))
            guard length >= 16, length <= bytes.endIndex - offset else { break }
            let type = NetfilterSocket.hostOrder16(bytes, offset + 4)
            // The message's attributes follow its header (16 bytes) and nfgenmsg (4).
            if type == NetfilterSocket.Subsystem.queue.rawValue << 8 | packetMessage, length >= 20 {
                var id: UInt32?
                var payload: ArraySlice<UInt8>?
                var position = offset + 20
                let end = offset + length
                while end - position >= 4 {
                    let size = Int(NetfilterSocket.hostOrder16(bytes, position))
                    let kind = NetfilterSocket.hostOrder16(bytes, position + 2) & 0x7FFF
                    guard size >= 4, size <= end - position else { break }
                    let value = bytes[(position + 4)..<(position + size)]
                    if kind == 1, value.count >= 4 {  // NFQA_PACKET_HDR: id (big-endian) first
                        id = value.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
                    } else if kind == 10 {  // NFQA_PAYLOAD
                        payload = value
                    }
                    position += (size + 3) & ~3
                }
                if let id, let payload { packets.append(Packet(id: id, bytes: payload)) }
            }
            offset += (length + 3) & ~3
        }
        return packets
    }
}
