/// A traffic-control handle, `major:minor`, as the kernel packs it into 32 bits.
///
/// Qdiscs are named `major:0`, classes `major:minor`. A few values are special:
/// `root` and `ingress` are parents, not objects.
public struct TrafficControlHandle: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public init(major: UInt16, minor: UInt16 = 0) {
        self.rawValue = UInt32(major) << 16 | UInt32(minor)
    }

    public var major: UInt16 { UInt16(truncatingIfNeeded: rawValue >> 16) }
    public var minor: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// The parent of a device's egress root qdisc (`TC_H_ROOT`).
    public static let root = TrafficControlHandle(rawValue: 0xFFFF_FFFF)
    /// The parent of a device's ingress qdisc (`TC_H_INGRESS`).
    public static let ingressParent = TrafficControlHandle(rawValue: 0xFFFF_FFF1)
    /// The handle every ingress qdisc has (`ffff:`).
    public static let ingress = TrafficControlHandle(major: 0xFFFF)
    /// No handle: the kernel picks one, or the object is the device default.
    public static let unspecified = TrafficControlHandle(rawValue: 0)

    /// The qdisc that owns this class (`major:0`).
    public var qdisc: TrafficControlHandle { TrafficControlHandle(major: major) }

    /// Formatted as `tc` prints it: `7a00:3`, `7a00:`, `root`, `ingress`.
    public var description: String {
        switch self {
        case .root: return "root"
        case .ingressParent: return "ingress"
        case .unspecified: return "none"
        default:
            let majorText = String(major, radix: 16)
            return minor == 0 ? "\(majorText):" : "\(majorText):\(String(minor, radix: 16))"
        }
    }
}
