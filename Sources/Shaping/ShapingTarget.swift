/// The interface to shape and the IFB device linkcond owns for its downlink.
public struct ShapingTarget: Hashable, Sendable {
    public var interface: String
    /// `lc-<interface>`, fitted into the kernel's 15-byte name limit.
    public var ifb: String

    public init(interface: String) {
        self.interface = interface
        self.ifb = Self.ifbName(for: interface)
    }

    static let ifbPrefix = "lc-"
    static let maximumNameLength = 15

    /// `lc-eth0`; when that is too long, a shortened name with a hash of the full one so that
    /// two long names sharing a prefix do not collide (`lc-enp0s31-1f3a`).
    static func ifbName(for interface: String) -> String {
        let plain = ifbPrefix + interface
        if plain.utf8.count <= maximumNameLength { return plain }
        let hash = String(fnv1a(interface) & 0xFFFF, radix: 16)
        let padded = String(repeating: "0", count: 4 - hash.count) + hash
        let room = maximumNameLength - ifbPrefix.utf8.count - 1 - padded.count
        // Whole characters only: a UTF-8 sequence cut in two would decode to a 3-byte U+FFFD
        // and overrun the limit (the kernel then refuses the name).
        var stem = ""
        for scalar in interface.unicodeScalars {
            guard stem.utf8.count + String(scalar).utf8.count <= room else { break }
            stem.unicodeScalars.append(scalar)
        }
        return ifbPrefix + stem + "-" + padded
    }

    package static func fnv1a(_ text: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }
}
