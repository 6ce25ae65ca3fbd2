/// A condition's packets in libpcap's filter language: its peers' networks and its port, or
/// every packet for a condition on the whole interface. Compiled by libpcap into the BPF
/// program the kernel runs, so that only these packets are copied to the daemon.
public struct CaptureFilter: Sendable, Equatable {
    /// Networks as `address/prefix` (IPv4 or IPv6).
    public var networks: [String]
    public var port: UInt16?
    /// `tcp`, `udp`, `sctp`: which transports carry the port; every one of them when empty.
    public var transports: [String]

    public init(networks: [String] = [], port: UInt16? = nil, transports: [String] = []) {
        self.networks = networks
        self.port = port
        self.transports = transports
    }

    /// `nil`: every packet.
    public var expression: String? {
        var parts: [String] = []
        let peers = networks.filter { !["0.0.0.0/0", "::/0"].contains($0) }
        if !peers.isEmpty {
            parts.append("(" + peers.map { "net \($0)" }.joined(separator: " or ") + ")")
        }
        if let port {
            let known = transports.filter { ["tcp", "udp", "sctp"].contains($0) }
            parts.append(known.isEmpty ? "port \(port)" : "(" + known.map { "\($0) port \(port)" }.joined(separator: " or ") + ")")
        }
        return parts.isEmpty ? nil : parts.joined(separator: " and ")
    }
}
