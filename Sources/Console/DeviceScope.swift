import Glibc
import HostFacts
import IPAddressText
import LinkCondVocabulary

/// Gateway mode: the interface test devices are behind, and which device a request speaks for
/// (by the address it came from, as the gateway sees it). A device may change its own
/// condition, `--interface LAN --device ADDRESS`, and nothing else.
public struct DeviceScope: Sendable {
    /// The interface the devices are behind (the gateway's LAN side).
    public var interface: String
    /// The interface's networks; read from the system unless given (tests).
    var networks: @Sendable () -> [Network]

    struct Network: Sendable, Equatable, CustomStringConvertible {
        var address: [UInt8]
        var prefixLength: Int

        func contains(_ other: [UInt8]) -> Bool {
            guard other.count == address.count else { return false }
            var bits = prefixLength
            for index in address.indices where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> UInt8(bits))
                if address[index] & mask != other[index] & mask { return false }
                bits -= 8
            }
            return true
        }

        var description: String { "\(formatIPAddress(zeroedHost))/\(prefixLength)" }

        private var zeroedHost: [UInt8] {
            var bits = prefixLength
            return address.map { byte in
                defer { bits -= 8 }
                return bits >= 8 ? byte : bits <= 0 ? 0 : byte & ~(0xff >> UInt8(bits))
            }
        }
    }

    public init(interface: String) {
        self.interface = interface
        networks = { Self.networks(of: interface) }
    }

    init(interface: String, networks: [Network]) {
        self.interface = interface
        self.networks = { networks }
    }

    /// What the console tells a device about itself.
    public struct Device: Sendable, Equatable {
        public var address: String
        /// The condition id the device may change; `nil` when it is not behind the gateway.
        public var condition: String?
        /// Why the device cannot have a condition here, in words for the page.
        public var problem: String?
    }

    /// The device `peer` is, seen from this gateway.
    public func device(at peer: String) -> Device {
        let text = Self.unmapped(peer)
        guard let bytes = parseIPAddress(text) else {
            return Device(address: text, problem: "the console cannot read the address \(text)")
        }
        let lan = networks().filter { $0.address.count == bytes.count }
        guard lan.contains(where: { $0.contains(bytes) }) else {
            let where_ = lan.isEmpty ? "has no address of this family" : "is on \(lan.map(\.description).joined(separator: ", "))"
            return Device(
                address: text,
                problem: "this device (\(text)) is not behind this gateway: \(interface) \(where_), so its traffic does not pass through here and a condition could not touch it"
            )
        }
        guard let peerSpec = try? PeerSpec(parsing: PeerSpec.devicePrefix + text) else {
            return Device(address: text, problem: "the address \(text) cannot name a device")
        }
        return Device(address: text, condition: ConditionID(interface: interface, peer: peerSpec).description)
    }

    /// `::ffff:192.0.2.1` as `192.0.2.1`: a dual-stack listener sees IPv4 peers so.
    static func unmapped(_ address: String) -> String {
        address.hasPrefix("::ffff:") && address.contains(".") ? String(address.dropFirst(7)) : address
    }

    /// Each address of `interface` with its prefix, but IPv6's link-local: every interface has
    /// one, and it says nothing of being behind this one.
    static func networks(of interface: String) -> [Network] {
        InterfaceAddress.of(interface).filter { !$0.isLinkLocal }.map { Network(address: $0.bytes, prefixLength: $0.prefixLength) }
    }
}
