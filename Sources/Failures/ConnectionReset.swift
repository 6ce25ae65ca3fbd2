import Glibc
import HostFacts
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
        InterfaceAddress.of(interface).map(\.bytes)
    }
}
