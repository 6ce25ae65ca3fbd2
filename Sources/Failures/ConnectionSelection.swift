import Shaping

/// Which of a namespace's TCP connections a condition's reset takes: those with its peer (a
/// condition with a match), those with a local address of its interface (the whole interface in
/// the daemon's own namespace), or every one that leaves the namespace (the whole interface of
/// another namespace: a container's, a sandbox's), or those a device behind this machine makes
/// through it (a gateway device's: forwarded, not this machine's sockets). Never one the
/// management exemptions keep (SSH), never one on loopback unless the peer is there.
public struct ConnectionSelection: Sendable, CustomStringConvertible {
    public enum Scope: Sendable {
        case peer(PeerMatch)
        case localAddresses([[UInt8]])
        case leavingTheNamespace
        /// The device's connections through this machine, to be reset in its conntrack
        /// (`DeviceFlows.resetRules`), none of this machine's sockets.
        case forwardedFor(DeviceFlows)
    }

    public var scope: Scope
    public var exemptions: Exemptions

    public init(_ scope: Scope, exemptions: Exemptions) {
        self.scope = scope
        self.exemptions = exemptions
    }

    public func takes(_ connection: TCPConnection) -> Bool {
        let exemptPorts = exemptions.ports.filter { $0.transport == .tcp }.map(\.port)
        if exemptPorts.contains(connection.local.port) || exemptPorts.contains(connection.remote.port) { return false }
        if exemptions.networks.contains(where: { $0.contains(connection.remote.address) }) { return false }
        switch scope {
        case .peer(let match):
            guard match.port.map({ $0 == connection.remote.port && match.transports.contains(.tcp) }) ?? true else { return false }
            // "Any address" (`*:443`) is any peer beyond the interface, not this machine's loopback.
            return match.networks.contains { network in
                network.contains(connection.remote.address) && (network.prefixLength > 0 || !connection.remote.isLoopback)
            }
        case .localAddresses(let addresses):
            return addresses.contains(connection.local.address) && !connection.remote.isLoopback
        case .leavingTheNamespace:
            return !connection.remote.isLoopback
        case .forwardedFor:
            return false
        }
    }

    /// Whether a forwarded connection of the device, to `remote` from the device's `devicePort`
    /// to `remotePort`, is one to reset: any but the exemptions'.
    public func takesForwarded(remote: [UInt8], devicePort: UInt16, remotePort: UInt16) -> Bool {
        let exemptPorts = exemptions.ports.filter { $0.transport == .tcp }.map(\.port)
        if exemptPorts.contains(devicePort) || exemptPorts.contains(remotePort) { return false }
        return !exemptions.networks.contains { $0.contains(remote) }
    }

    /// `TCP connections with 192.0.2.7:443`, for logs and history.
    public var description: String {
        switch scope {
        case .peer(let match): "TCP connections with \(match)"
        case .localAddresses: "TCP connections of the interface's addresses"
        case .leavingTheNamespace: "TCP connections that leave the namespace"
        case .forwardedFor: "TCP connections the device makes through this machine"
        }
    }
}
