/// What a trace says a command talked to: each peer (with the DNS names the trace saw answered
/// for it), its ports and protocols, bytes and packets each way, TCP retransmissions and resets,
/// and every plaintext HTTP request (host and path). Every packet is hostile: headers are read
/// only within the bytes captured, and anything not understood is counted, not trusted.
public struct TraceSummary: Sendable, Equatable, Codable {
    public struct Peer: Sendable, Equatable, Codable {
        /// The far end's address as text.
        public var address: String
        /// The names a DNS answer in the trace gave this address, in the order first seen.
        public var names: [String] = []
        /// `tcp/443`, `udp/53`, `icmp`: what the command exchanged with it.
        public var services: [String] = []
        public var bytesOut: UInt64 = 0
        public var bytesIn: UInt64 = 0
        public var packetsOut: UInt64 = 0
        public var packetsIn: UInt64 = 0
        /// TCP segments whose payload the trace had already seen in the same direction.
        public var retransmissions: UInt64 = 0
        /// TCP segments with RST set, either way.
        public var resets: UInt64 = 0
    }

    /// A request sent in the clear: `GET http://example.com/path`.
    public struct PlaintextRequest: Sendable, Equatable, Codable {
        public var method: String
        public var host: String
        public var path: String
        public var peer: String
    }

    public var peers: [Peer] = []
    public var plaintextHTTP: [PlaintextRequest] = []
    /// Packets the summary could not read (truncated headers, unknown link types).
    public var unreadable: UInt64 = 0

    /// Names longer than this, and HTTP heads longer than this, are cut.
    static let longestText = 253
    /// At most this many peers are kept, the busiest; the rest are counted together.
    public static let mostPeers = 64

    public init(_ trace: PcapngReader) {
        var builder = Builder()
        // The condition's packets are the first Ethernet interface's; a later one holds those it
        // dropped (`--keep-dropped`), which never reached the far end.
        let conditionInterface = trace.interfaces.firstIndex { $0.link == LinkType.ethernet.rawValue }
        for packet in trace.packets {
            let link = trace.interfaces[packet.interface].link
            if packet.interface == conditionInterface {
                builder.add(packet)
            } else if link != LinkType.ethernet.rawValue && link != LinkType.notes.rawValue {
                builder.unreadable += 1
            }
        }
        self = builder.summary()
    }

    /// Text from a packet, safe to show on a terminal: control characters (an escape sequence
    /// would be run by the terminal) become `?`, and it is cut at `longestText` characters.
    static func printable<Text: StringProtocol>(_ text: Text) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(longestText).map { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar
        }))
    }

    init(peers: [Peer], plaintextHTTP: [PlaintextRequest], unreadable: UInt64) {
        self.peers = peers
        self.plaintextHTTP = plaintextHTTP
        self.unreadable = unreadable
    }
}

private struct Builder {
    var peers: [String: TraceSummary.Peer] = [:]
    var order: [String] = []
    var names: [String: [String]] = [:]
    var plaintext: [TraceSummary.PlaintextRequest] = []
    var unreadable: UInt64 = 0
    /// Per TCP flow and direction, the highest sequence number (modulo 2³²) whose payload was seen.
    var highest: [FlowKey: UInt32] = [:]

    struct FlowKey: Hashable {
        var local: [UInt8]
        var remote: [UInt8]
        var localPort: UInt16
        var remotePort: UInt16
        var outbound: Bool
    }

    mutating func add(_ packet: PcapngReader.Packet) {
        guard let ip = IPPacket(ethernet: packet.data), packet.direction != .unknown else {
            unreadable += 1
            return
        }
        let outbound = packet.direction == .outbound
        let remote = outbound ? ip.destination : ip.source
        let local = outbound ? ip.source : ip.destination
        let key = IPPacket.text(remote)
        var peer = peers[key] ?? TraceSummary.Peer(address: key)
        if peers[key] == nil { order.append(key) }
        if outbound {
            peer.bytesOut += UInt64(packet.length)
            peer.packetsOut += 1
        } else {
            peer.bytesIn += UInt64(packet.length)
            peer.packetsIn += 1
        }
        switch ip.transport {
        case .tcp(let segment):
            let remotePort = outbound ? segment.destinationPort : segment.sourcePort
            let localPort = outbound ? segment.sourcePort : segment.destinationPort
            note("tcp/\(remotePort)", in: &peer)
            if segment.reset { peer.resets += 1 }
            if !segment.payload.isEmpty {
                let flow = FlowKey(local: local, remote: remote, localPort: localPort, remotePort: remotePort, outbound: outbound)
                let end = segment.sequence &+ UInt32(truncatingIfNeeded: segment.payload.count)
                let again = highest[flow].map { Int32(bitPattern: end &- $0) <= 0 } ?? false
                if again {
                    peer.retransmissions += 1
                } else {
                    highest[flow] = end
                }
                if outbound, !again, let request = HTTPRequestHead(segment.payload) {
                    plaintext.append(TraceSummary.PlaintextRequest(method: request.method, host: request.host ?? key, path: request.path, peer: key))
                }
            }
        case .udp(let datagram):
            let remotePort = outbound ? datagram.destinationPort : datagram.sourcePort
            note("udp/\(remotePort)", in: &peer)
            if !outbound, datagram.sourcePort == 53 {
                for (address, name) in DNSAnswers.read(datagram.payload) {
                    var known = names[address] ?? []
                    if !known.contains(name), known.count < 8 { known.append(name) }
                    names[address] = known
                }
            }
        case .icmp:
            note(ip.isIPv6 ? "icmpv6" : "icmp", in: &peer)
        case .other(let number):
            note("ip/\(number)", in: &peer)
        }
        peers[key] = peer
    }

    private func note(_ service: String, in peer: inout TraceSummary.Peer) {
        if !peer.services.contains(service), peer.services.count < 16 { peer.services.append(service) }
    }

    func summary() -> TraceSummary {
        var list = order.compactMap { peers[$0] }
        for index in list.indices {
            list[index].names = names[list[index].address] ?? []
        }
        if list.count > TraceSummary.mostPeers {
            list.sort { $0.bytesIn + $0.bytesOut > $1.bytesIn + $1.bytesOut }
            let rest = list[TraceSummary.mostPeers...]
            var others = TraceSummary.Peer(address: "others (\(rest.count) peers)")
            for peer in rest {
                others.bytesIn += peer.bytesIn
                others.bytesOut += peer.bytesOut
                others.packetsIn += peer.packetsIn
                others.packetsOut += peer.packetsOut
                others.retransmissions += peer.retransmissions
                others.resets += peer.resets
            }
            list = Array(list[..<TraceSummary.mostPeers]) + [others]
        }
        return TraceSummary(peers: list, plaintextHTTP: Array(plaintext.prefix(100)), unreadable: unreadable)
    }
}
