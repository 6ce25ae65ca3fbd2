import Glibc
import Netlink

/// What a reset did: the connections it destroyed, and those that ended on their own between
/// the listing and the destroy.
public struct ResetOutcome: Sendable, Equatable {
    public var reset: Int
    public var alreadyGone: Int

    public init(reset: Int = 0, alreadyGone: Int = 0) {
        self.reset = reset
        self.alreadyGone = alreadyGone
    }
}

/// Resets the TCP connections a selection takes in one network namespace: the kernel's
/// sock_diag, or a test's stand-in.
public protocol ConnectionResetter: AnyObject {
    /// In the daemon's own namespace for `namespace` `nil`, else in the one at `namespace.path`,
    /// while it is still `namespace.identity`.
    func reset(_ selection: ConnectionSelection, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> ResetOutcome
    /// The addresses of `interface` in the daemon's own namespace, network order.
    func addresses(of interface: String) -> [[UInt8]]
}

/// The kernel's: sock_diag in the namespace, opened for each reset.
public final class KernelConnectionResetter: ConnectionResetter {
    /// Listings a reset makes at most: one unless a namespace holds more than `listLimit`
    /// connections it may take.
    static let rounds = 8

    public init() {}

    public func reset(_ selection: ConnectionSelection, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> ResetOutcome {
        let diagnostics = if let namespace {
            try SocketDiagnostics(in: NetworkNamespaceFile(path: namespace.path, expected: namespace.identity))
        } else {
            try SocketDiagnostics()
        }
        try diagnostics.checkDestroyIsSupported()
        var outcome = ResetOutcome()
        for _ in 0..<Self.rounds {
            let (connections, found) = try diagnostics.resettableConnections()
            for connection in connections where selection.takes(connection) {
                if try diagnostics.destroy(connection) {
                    outcome.reset += 1
                } else {
                    outcome.alreadyGone += 1
                }
            }
            guard found > connections.count else { break }
        }
        return outcome
    }

    public func addresses(of interface: String) -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [[UInt8]] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let name = entry.pointee.ifa_name, String(cString: name) == interface, let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                    addresses.append(withUnsafeBytes(of: ipv4.pointee.sin_addr) { Array($0) })
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                    addresses.append(withUnsafeBytes(of: ipv6.pointee.sin6_addr) { Array($0) })
                }
            default:
                break
            }
        }
        return addresses
    }
}
