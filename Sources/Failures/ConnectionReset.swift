import Glibc
import HostFacts
import Netlink
import Shaping

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
    /// Hands a device behind `interface` over, as from Wi-Fi to LTE (`DeviceHandover`); returns
    /// how many of its flows will be translated anew.
    func handOver(_ handover: DeviceHandover, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> Int
    /// Removes a handover's NAT table; one gone already is fine.
    func endHandover(_ handover: DeviceHandover, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError)
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

    public func handOver(_ handover: DeviceHandover, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> Int {
        guard handover.isNameable else {
            throw NetlinkError(code: .invalid, operation: "hand over a device behind \(handover.interface)", errno: EINVAL, reason: "its name holds a quote or a backslash, which nftables rules cannot name")
        }
        let file = try namespace.map { (namespace) throws(NetlinkError) in try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity) }
        try NFTablesKernel(namespaceAt: namespace?.path, identity: namespace?.identity).run(handover.commands)
        return try NetfilterSocket(in: file).deleteConnections(from: Set(handover.addresses))
    }

    public func endHandover(_ handover: DeviceHandover, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) {
        let filter = NFTablesKernel(namespaceAt: namespace?.path, identity: namespace?.identity)
        guard filter.isLoaded, try filter.run("list tables inet\n").contains("table inet \(handover.table)\n") else { return }
        try filter.run(handover.removal)
    }
}
