import IPAddressText

/// Traffic that is never shaped, in either direction.
///
/// Exempt packets go to the unshaped default class. TCP port 22 is exempt unless the daemon is
/// told otherwise, so that Black Hole on a remote machine never locks its users out.
public struct Exemptions: Hashable, Sendable {
    public var ports: [PortExemption]
    public var networks: [IPNetwork]

    public init(ports: [PortExemption] = [], networks: [IPNetwork] = []) {
        self.ports = ports
        self.networks = networks
    }

    /// SSH, and nothing else.
    public static let ssh = PortExemption(port: 22, transport: .tcp)
    public static let `default` = Exemptions(ports: [ssh])

    /// `tcp/22, 10.0.0.0/8`, or `none`.
    public var summary: String {
        let parts = ports.map(\.description) + networks.map(\.description)
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}

/// A transport port exempt from shaping as source or destination.
public struct PortExemption: Hashable, Sendable, CustomStringConvertible {
    public enum Transport: String, Sendable, CaseIterable {
        case tcp, udp

        /// The IP protocol number.
        public var ipProtocol: UInt8 {
            switch self {
            case .tcp: return 6
            case .udp: return 17
            }
        }
    }

    public var port: UInt16
    public var transport: Transport

    public init(port: UInt16, transport: Transport) {
        self.port = port
        self.transport = transport
    }

    /// Reads `22`, `22/tcp` or `53/udp`; a bare number means TCP.
    public init(parsing text: String) throws(ExemptionParseError) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let port = UInt16(first), port > 0 else {
            throw ExemptionParseError(text: text, expected: "a port from 1 to 65535, optionally with /tcp or /udp (e.g. 22 or 5060/udp)")
        }
        var transport = Transport.tcp
        if parts.count == 2 {
            guard let named = Transport(rawValue: parts[1].lowercased()) else {
                throw ExemptionParseError(text: text, expected: "tcp or udp after the slash")
            }
            transport = named
        }
        self.init(port: port, transport: transport)
    }

    public var description: String { "\(transport.rawValue)/\(port)" }
}

/// An IPv4 or IPv6 network in CIDR notation.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public enum Family: Sendable { case ipv4, ipv6 }

    /// Network-order address bytes: 4 for IPv4, 16 for IPv6, host bits cleared.
    public private(set) var address: [UInt8]
    public private(set) var prefixLength: Int

    public var family: Family { address.count == 4 ? .ipv4 : .ipv6 }

    /// `address` is 4 or 16 network-order bytes; host bits are cleared.
    public init(address: [UInt8], prefixLength: Int) {
        precondition(address.count == 4 || address.count == 16, "an IPv4 or IPv6 address")
        precondition((0...address.count * 8).contains(prefixLength), "a prefix within the address")
        self.prefixLength = prefixLength
        self.address = address.enumerated().map { index, byte in
            let keep = max(0, min(8, prefixLength - index * 8))
            return keep == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
    }

    /// Reads `10.0.0.0/8`, `192.0.2.7` (a single host), `fd00::/8` or `2001:db8::1`.
    public init(parsing text: String) throws(ExemptionParseError) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let addressText = parts.first, let bytes = parseIPAddress(addressText) else {
            throw ExemptionParseError(text: text, expected: "an IPv4 or IPv6 network like 10.0.0.0/8 or fd00::/8")
        }
        let bits = bytes.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length) else {
                throw ExemptionParseError(text: text, expected: "a prefix length from 0 to \(bits)")
            }
            prefix = length
        }
        self.init(address: bytes, prefixLength: prefix)
    }

    public var description: String {
        formatIPAddress(address) + "/\(prefixLength)"
    }

    /// Whether `bytes` (4 or 16 network-order bytes) is an address of this network.
    public func contains(_ bytes: [UInt8]) -> Bool {
        bytes.count == address.count && IPNetwork(address: bytes, prefixLength: prefixLength).address == address
    }
}

public struct ExemptionParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var expected: String

    public var description: String { "'\(text)' is not valid: expected \(expected)" }
}
