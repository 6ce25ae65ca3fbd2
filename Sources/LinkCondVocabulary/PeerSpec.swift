import IPAddressText

/// Whom a condition with a match shapes traffic with, as users write it after `--to`:
/// an address (`10.0.0.5`, `2001:db8::1`), a network (`10.0.0.0/8`, `2001:db8::/32`), a host
/// name (`api.example.com`, whose addresses the daemon looks up when it makes the condition)
/// or `*` for any, optionally with a port (`10.0.0.5:443`, `[2001:db8::1]:443`, `*:8080`) and a transport
/// (`:53/udp`; a port alone means TCP and UDP alike, as HTTP/3 runs on UDP 443).
///
/// Or, on a gateway, a device behind it (`device=192.168.50.10`): then the device's uplink is
/// what it sends (arriving on the interface) and its downlink what it receives (leaving it).
///
/// Its `description` is the canonical text, part of the condition's id.
public struct PeerSpec: Hashable, Sendable, CustomStringConvertible {
    public enum Transport: String, Sendable, CaseIterable {
        case tcp, udp
    }

    /// Network-order bytes (4 or 16, host bits cleared) and prefix; `nil` for any address, or
    /// for a host name's.
    public var address: [UInt8]?
    /// A host name (lower case, without a final dot), standing for the addresses it resolves to.
    public var hostName: String?
    public var prefixLength: Int
    public var port: UInt16?
    /// With a port: `nil` for both transports.
    public var transport: Transport?
    /// A device behind this machine (a gateway's client), not a peer it talks to.
    public var isDevice = false

    public static let devicePrefix = "device="

    public init(parsing text: String) throws(PeerSpecError) {
        guard text.hasPrefix(Self.devicePrefix) else {
            try self.init(parsingPeer: text)
            return
        }
        let address = String(text.dropFirst(Self.devicePrefix.count))
        try self.init(parsingPeer: address)
        guard self.address != nil, port == nil, !address.hasPrefix("[") else {
            if hostName != nil {
                throw PeerSpecError(text: text, problem: "names a device by its address, not a host name (device=192.168.50.10)")
            }
            throw PeerSpecError(text: text, problem: "names a device by its address or network alone (device=192.168.50.10)")
        }
        isDevice = true
    }

    private init(parsingPeer text: String) throws(PeerSpecError) {
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else { throw PeerSpecError(text: text, problem: "is empty or too long") }
        var rest = Substring(text)
        var transport: Transport?
        for candidate in Transport.allCases where rest.hasSuffix("/" + candidate.rawValue) {
            transport = candidate
            rest = rest.dropLast(candidate.rawValue.count + 1)
        }
        var hostText: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw PeerSpecError(text: text, problem: "has a '[' without ']'") }
            hostText = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":"), after.count > 1 else { throw PeerSpecError(text: text, problem: "needs ':PORT' after ']'") }
            portText = after.dropFirst()
        } else if rest.filter({ $0 == ":" }).count == 1 {
            let colon = rest.firstIndex(of: ":")!
            hostText = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            hostText = rest
        }
        if let portText {
            guard let port = UInt16(portText), port > 0 else { throw PeerSpecError(text: text, problem: "has a port that is not 1 to 65535") }
            self.port = port
            self.transport = transport
        } else {
            guard transport == nil else { throw PeerSpecError(text: text, problem: "names a transport without a port (10.0.0.5:53/udp)") }
            self.port = nil
            self.transport = nil
        }
        if hostText == "*" {
            guard port != nil else { throw PeerSpecError(text: text, problem: "is '*' without a port: that is the whole interface, which needs no --to") }
            self.address = nil
            self.prefixLength = 0
            return
        }
        let parts = hostText.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = parseIPAddress(String(parts[0])) else {
            guard parts.count == 1, !rest.hasPrefix("["), let name = Self.hostName(hostText) else {
                throw PeerSpecError(text: text, problem: "is not an IPv4 or IPv6 address, a network like 10.0.0.0/8, a host name or '*:PORT'")
            }
            self.hostName = name
            self.address = nil
            self.prefixLength = 0
            return
        }
        var prefix = bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bytes.count * 8).contains(length) else {
                throw PeerSpecError(text: text, problem: "has a prefix length that is not 0 to \(bytes.count * 8)")
            }
            prefix = length
        }
        self.prefixLength = prefix
        self.address = bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
    }

    public var isIPv6: Bool { address?.count == 16 }

    /// Every address, of either family: `*`.
    public var isAnyAddress: Bool { address == nil && hostName == nil }

    /// The longest host name taken: DNS allows 253 characters, but the condition's id names its
    /// state file, which a file system keeps under 255 bytes with the interface, namespace,
    /// port and percent-encoding around it.
    public static let maximumHostNameLength = 160
    /// The longest text taken: the longest host name, a port and a transport.
    public static let maximumLength = maximumHostNameLength + 16

    /// `text` as a host name (RFC 1123: dot-separated labels of letters, digits and inner
    /// hyphens, at most 63 characters each), lower-cased and without a final dot; `nil` when it
    /// is not one. A last label of digits alone is not a host name but a
    /// mistyped address (`10.0.0`).
    static func hostName(_ text: Substring) -> String? {
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= maximumHostNameLength else { return nil }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                  label.utf8.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") })
            else { return nil }
        }
        guard let last = labels.last, !last.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return name
    }

    /// Whether every address this names is the machine's own loopback (within `127.0.0.0/8`,
    /// or `::1`), which no interface but `lo` carries.
    public var isLoopback: Bool {
        guard let address, !isDevice else { return false }
        return isLoopbackAddress(address) && prefixLength >= (address.count == 4 ? 8 : 128)
    }

    /// Whether this names a server's port, so that on `lo` the port tells the two ways apart:
    /// towards the server it is the destination port, from it the source port.
    public var namesServerPort: Bool { port != nil && !isDevice }

    public var description: String {
        isDevice ? Self.devicePrefix + peerDescription : peerDescription
    }

    private var peerDescription: String {
        var host = hostName ?? "*"
        if let address {
            host = formatIPAddress(address) + (prefixLength == address.count * 8 ? "" : "/\(prefixLength)")
        }
        guard let port else { return host }
        if isIPv6 { host = "[\(host)]" }
        return "\(host):\(port)" + (transport.map { "/\($0.rawValue)" } ?? "")
    }
}

public struct PeerSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "'\(text)' \(problem)" }
}
