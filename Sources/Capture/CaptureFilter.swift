/// A condition's packets in libpcap's filter language: its peers' networks and its port, or
/// every packet for a condition on the whole interface. Compiled by libpcap into the BPF
/// program the kernel runs, so that only these packets are copied to the daemon.
public struct CaptureFilter: Sendable, Equatable {
    /// Which way the packets a tap reads go, from the app's side.
    public enum Leg: Sendable {
        case uplink, downlink
    }

    /// Networks as `address/prefix` (IPv4 or IPv6).
    public var networks: [String]
    public var port: UInt16?
    /// `tcp`, `udp`, `sctp`: which transports carry the port; every one of them when empty.
    public var transports: [String]
    /// The port is a local server's on loopback, where every packet leaves and arrives on the
    /// same device: the uplink's packets are those to the port, the downlink's those from it,
    /// so that each is taken once, after its own tree.
    public var portIsLocalServer: Bool

    public init(networks: [String] = [], port: UInt16? = nil, transports: [String] = [], portIsLocalServer: Bool = false) {
        self.networks = networks
        self.port = port
        self.transports = transports
        self.portIsLocalServer = portIsLocalServer
    }

    /// Both legs' packets; `nil`: every packet.
    public var expression: String? {
        expression(portSide: "")
    }

    /// The packets of one leg: the same as `expression` but on loopback, where the port's side
    /// tells the legs apart.
    public func expression(for leg: Leg) -> String? {
        guard portIsLocalServer else { return expression }
        return expression(portSide: leg == .uplink ? "dst " : "src ")
    }

    private func expression(portSide: String) -> String? {
        var parts: [String] = []
        let peers = networks.filter { !["0.0.0.0/0", "::/0"].contains($0) }
        if !peers.isEmpty {
            parts.append("(" + peers.map { "net \($0)" }.joined(separator: " or ") + ")")
        }
        if let port {
            let known = transports.filter { ["tcp", "udp", "sctp"].contains($0) }
            parts.append(
                known.isEmpty ? "\(portSide)port \(port)" : "(" + known.map { "\($0) \(portSide)port \(port)" }.joined(separator: " or ") + ")"
            )
        }
        return parts.isEmpty ? nil : parts.joined(separator: " and ")
    }
}
