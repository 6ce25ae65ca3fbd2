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
    /// Hands a device behind `interface` over, as from Wi-Fi to LTE (`DeviceFlows`); returns
    /// how many of its flows will be translated anew.
    func handOver(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> Int
    /// Removes a device's table (its handover's NAT, its resets' rules); one gone already is fine.
    func removeTable(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError)
    /// Removes the device tables in the daemon's own namespace that `kept` does not name (those a
    /// daemon left for conditions it took with it); returns what it removed.
    func removeDeviceTables(except kept: Set<String>) -> [String]
}

/// The kernel's: sock_diag in the namespace, opened for each reset.
public final class KernelConnectionResetter: ConnectionResetter {
    /// Listings a reset makes at most: one unless a namespace holds more than `listLimit`
    /// connections it may take.
    static let rounds = 8

    public init() {}

    public func reset(_ selection: ConnectionSelection, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> ResetOutcome {
        if case .forwardedFor(let device) = selection.scope {
            return try resetForwarded(device, selection, inNamespace: namespace)
        }
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

    public func handOver(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> Int {
        guard handover.isNameable else {
            throw NetlinkError(code: .invalid, operation: "hand over a device behind \(handover.interface)", errno: EINVAL, reason: "its name holds a quote or a backslash, which nftables rules cannot name")
        }
        let file = try namespace.map { (namespace) throws(NetlinkError) in try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity) }
        let conntrack = try NetfilterSocket(in: file)
        let addresses = Set(handover.addresses)
        // The flows tracked before the NAT, translated or not, all go: an entry made after it is a
        // flow translated anew already, which a deletion would move a second time.
        let tracked = try conntrack.connections(from: addresses)
        try NFTablesKernel(namespaceAt: namespace?.path, identity: namespace?.identity).run(handover.commands)
        // A router that tracked no connection (no NAT or stateful rule of its own) begins with the
        // table: its conntrack hooks work before the table's chains do, so the flows' packets in
        // that moment are tracked untranslated and unanswered. Those go too.
        let known = Set(tracked.map(\.identifier))
        let pickedUp = try conntrack.connections(from: addresses).filter { !known.contains($0.identifier) && $0.isUntranslated }
        return try conntrack.delete(tracked + pickedUp)
    }

    /// A device's established TCP connections through this machine, reset at both ends: marked
    /// in conntrack, answered with a reset by the device's table, and each end asked for a
    /// segment at once (`ResetProbe`).
    private func resetForwarded(_ device: DeviceFlows, _ selection: ConnectionSelection, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) -> ResetOutcome {
        guard device.isNameable else {
            throw NetlinkError(code: .invalid, operation: "reset a device's connections behind \(device.interface)", errno: EINVAL, reason: "its name holds a quote or a backslash, which nftables rules cannot name")
        }
        let file = try namespace.map { (namespace) throws(NetlinkError) in try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity) }
        let conntrack = try NetfilterSocket(in: file)
        let flows = try conntrack.connections(from: Set(device.addresses)).filter { flow in
            flow.protocolNumber == 6 && flow.tcpState == 3 && flow.destination.count == flow.source.count && flow.replyDestination.count == flow.source.count
                && selection.takesForwarded(remote: flow.destination, devicePort: flow.sourcePort, remotePort: flow.destinationPort)
        }
        guard !flows.isEmpty else { return ResetOutcome() }
        try NFTablesKernel(namespaceAt: namespace?.path, identity: namespace?.identity).run(device.resetRules)
        for flow in flows { try conntrack.mark(flow, DeviceFlows.resetMark) }
        let probes = flows.flatMap { flow in
            [
                (ResetProbe(from: flow.destination, port: flow.destinationPort, to: flow.source, port: flow.sourcePort, sequence: .random(in: 0...UInt32.max), acknowledgement: .random(in: 0...UInt32.max)), flow.source),
                (ResetProbe(from: flow.replyDestination, port: flow.replyDestinationPort, to: flow.destination, port: flow.destinationPort, sequence: .random(in: 0...UInt32.max), acknowledgement: .random(in: 0...UInt32.max)), flow.destination),
            ]
        }
        let send = { probes.map { RawPacket.send($0.0.bytes, to: $0.1, mark: DeviceFlows.probeMark) }.first { $0 != 0 } }
        let failed: Int32? = if let file { try file.whileInside("send a reset's probes", send) } else { send() }
        if let failed {
            // The marks stay: each end's next segment is answered with a reset all the same.
            throw NetlinkError(code: .other, operation: "ask a device's connections for a segment", errno: failed, reason: String(cString: strerror(failed)))
        }
        return ResetOutcome(reset: flows.count)
    }

    public func removeDeviceTables(except kept: Set<String>) -> [String] {
        let filter = NFTablesKernel()
        guard filter.isLoaded, let listing = try? filter.run("list tables inet\n") else { return [] }
        let stale = ShapingEngine.inetTables(inListing: listing, prefix: DeviceFlows.tablePrefix).filter { !kept.contains($0) }
        return stale.filter { (try? filter.run("delete table inet \($0)\n")) != nil }
    }

    public func removeTable(_ handover: DeviceFlows, inNamespace namespace: (path: String, identity: NamespaceIdentity)?) throws(NetlinkError) {
        let filter = NFTablesKernel(namespaceAt: namespace?.path, identity: namespace?.identity)
        guard filter.isLoaded, ShapingEngine.inetTables(inListing: try filter.run("list tables inet\n"), prefix: handover.table).contains(handover.table) else { return }
        try filter.run(handover.removal)
    }
}
