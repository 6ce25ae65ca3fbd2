#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finds the interface of the default route, the one a user most likely means.
public enum DefaultRoute {
    /// The IPv4 default route's interface, else the IPv6 one; lowest metric wins.
    public static func interface() -> String? {
        interface(
            ipv4RouteTable: try? String(contentsOfFile: "/proc/net/route", encoding: .utf8),
            ipv6RouteTable: try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)
        )
    }

    /// The same, from the two tables' text as some network namespace reads them.
    public static func interface(ipv4RouteTable: String?, ipv6RouteTable: String?) -> String? {
        ipv4RouteTable.flatMap(interface(inIPv4RouteTable:)) ?? ipv6RouteTable.flatMap(interface(inIPv6RouteTable:))
    }

    /// Reads `/proc/net/route`: `Iface Destination Gateway Flags RefCnt Use Metric Mask ...`, hex.
    package static func interface(inIPv4RouteTable table: String) -> String? {
        let routeIsUp = 0x1
        let candidates = table.split(separator: "\n").dropFirst().compactMap { line -> (String, Int)? in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 8,
                  fields[1] == "00000000", fields[7] == "00000000",
                  let flags = Int(fields[3], radix: 16), flags & routeIsUp != 0,
                  let metric = Int(fields[6])
            else { return nil }
            return (String(fields[0]), metric)
        }
        return candidates.min { $0.1 < $1.1 }?.0
    }

    /// Reads `/proc/net/ipv6_route`: `dest prefixlen src srcprefixlen nexthop metric refcnt use flags iface`.
    package static func interface(inIPv6RouteTable table: String) -> String? {
        let candidates = table.split(separator: "\n").compactMap { line -> (String, Int)? in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 10,
                  fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                  fields[9] != "lo",
                  let metric = Int(fields[5], radix: 16)
            else { return nil }
            return (String(fields[9]), metric)
        }
        return candidates.min { $0.1 < $1.1 }?.0
    }
}
