#if canImport(FoundationEssentials)
import Conditions
import ControlHTTP
import FoundationEssentials
#else
import Foundation
#endif

/// What the process may do, read from `/proc/self/status`.
public enum Capabilities {
    /// `CAP_NET_ADMIN`, needed for every traffic-control change.
    static let netAdmin = 12

    /// Whether the effective capability set holds `CAP_NET_ADMIN`; `true` when unknowable, so the
    /// kernel gets the final word.
    public static func hasNetAdmin() -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return true }
        return hasNetAdmin(inProcessStatus: status) ?? true
    }

    static func hasNetAdmin(inProcessStatus status: String) -> Bool? {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let mask = UInt64(String(line.dropFirst("CapEff:".count).filter { !$0.isWhitespace }), radix: 16)
        else { return nil }
        return mask & (1 << UInt64(netAdmin)) != 0
    }
}
