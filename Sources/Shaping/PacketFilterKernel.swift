import Glibc
import Netlink
import Profiles

/// The side-effect edge of failures: nftables commands carried out as one transaction in a
/// network namespace. `NFTablesKernel` talks to the kernel through libnftables; tests use a model.
public protocol PacketFilterKernel: AnyObject {
    /// Runs `commands` (nft's language) as one transaction: all take effect, or none. Returns
    /// what nft printed (a `list` command's output).
    @discardableResult
    func run(_ commands: String) throws(NetlinkError) -> String
    /// Whether the kernel's nftables is there at all: without it no table can be, and asking
    /// would load it.
    var isLoaded: Bool { get }
    /// Adds (or removes) the policy rules, IPv4 and IPv6, that give packets with
    /// `FailureRuleset.unreachableMark` no route; adding rules already there, or removing rules
    /// already gone, is fine.
    func setUnreachableRules(_ present: Bool) throws(NetlinkError)
    /// Makes linkcondd take the packets `table` queues (`FailureRuleset.queues`),
    /// replacing what it answered for that table before; empty stops. Returns what it was.
    @discardableResult
    func answerQueues(_ queues: [UInt16: QueueDuty], forTable table: String) throws(NetlinkError) -> [UInt16: QueueDuty]
    /// Takes the link of `interface` down (`true`) as a Wi-Fi drop-out does, or brings it back:
    /// its carrier goes (its veth's other end, in the daemon's namespace, goes down) and this
    /// namespace stops using its routes (`ignore_routes_with_linkdown`, which marks it as
    /// linkcond's doing). Bringing back a link linkcond did not take down does nothing.
    func setLinkDown(_ down: Bool, interface: String) throws(NetlinkError)
}

/// Takes the packets failure tables queue in every namespace: one responder for the daemon,
/// which listens on the queues of each namespace a table uses (`Failures.QueueResponder`).
public protocol QueuedPacketAnswering: AnyObject, Sendable {
    /// What `PacketFilterKernel.answerQueues` asks, for the namespace at `path` (`nil`: the daemon's own).
    func answer(_ queues: [UInt16: QueueDuty], forTable table: String, inNamespaceAt path: String?, identity: NamespaceIdentity?) throws(NetlinkError) -> [UInt16: QueueDuty]
}

/// The kernel's nftables, through a libnftables context made for each call: in the daemon's own
/// namespace, or inside another one (entered for the call, as the tc kernel of that namespace
/// is, so that nothing held keeps a container's namespace alive).
public final class NFTablesKernel: PacketFilterKernel {
    private let namespace: (path: String, identity: NamespaceIdentity)?
    private let responder: (any QueuedPacketAnswering)?

    public init(namespaceAt path: String? = nil, identity: NamespaceIdentity? = nil, responder: (any QueuedPacketAnswering)? = nil) {
        self.responder = responder
        if let path, let identity {
            self.namespace = (path, identity)
        } else {
            self.namespace = nil
        }
    }

    public var isLoaded: Bool { access("/sys/module/nf_tables", F_OK) == 0 }

    public func run(_ commands: String) throws(NetlinkError) -> String {
        guard let file = try namespaceFile() else { return try NFTablesCommands.run(commands) }
        return try file.whileInside("run nftables commands") { () -> Result<String, NetlinkError> in
            Result { () throws(NetlinkError) -> String in try NFTablesCommands.run(commands) }
        }.get()
    }

    public func setUnreachableRules(_ present: Bool) throws(NetlinkError) {
        let socket = if let file = try namespaceFile() { try NetlinkSocket(in: file) } else { try NetlinkSocket() }
        for family in [AF_INET, AF_INET6] {
            let rule = UnreachableRule(family: family, mark: FailureRuleset.unreachableMark, priority: FailureRuleset.unreachableRulePriority)
            if present {
                try socket.addUnreachableRule(rule)
            } else {
                try socket.deleteUnreachableRule(rule)
            }
        }
    }

    public func setLinkDown(_ down: Bool, interface: String) throws(NetlinkError) {
        guard let file = try namespaceFile() else {
            guard down else { return }
            throw NetlinkError(
                code: .other, operation: "find the namespace of \(interface)",
                reason: "\(interface) is in linkcondd's own network namespace, and taking it down would cut this machine off (SSH too); take a sandbox's (run --isolated) or a namespace's (--netns, --pid) link down, or use --offline"
            )
        }
        let marker = "ipv4/conf/\(interface)/ignore_routes_with_linkdown"
        let marked = try file.networkSetting(marker) == "1"
        guard down || marked else { return }
        let inside = try NetlinkSocket(in: file)
        let host = try NetlinkSocket()
        guard let link = try inside.link(named: interface) else {
            throw NetlinkError(code: .noSuchDevice, operation: "look up \(interface)", reason: "no such device")
        }
        guard link.kind == "veth", let peerIndex = link.peerIndex, let peer = try host.link(index: peerIndex),
              peer.kind == "veth", peer.peerIndex == link.index else {
            throw NetlinkError(
                code: .other, operation: "find the other end of \(interface)",
                reason: "\(interface) is not a veth whose other end is in linkcondd's namespace (as a sandbox's and most containers' are): its carrier cannot be taken"
            )
        }
        // The other end keeps its IPv6 addresses while it is down (an end down loses them by
        // default); 2 says linkcond set it, and is set back to 0 as the link comes back.
        let keepAddresses = "ipv6/conf/\(peer.name)/keep_addr_on_down"
        if down {
            // Routes added through the other end would go with it and not come back.
            let added = try host.addedRoutes(through: peer.index)
            guard added.isEmpty || !peer.isUp else {
                throw NetlinkError(
                    code: .other, operation: "check the routes through \(peer.name)",
                    reason: "the other end of \(interface), \(peer.name), carries routes added by hand (\(added.joined(separator: ", "))), which the kernel would remove as it goes down and not put back; use --offline for this namespace"
                )
            }
            for family in ["ipv4", "ipv6"] {
                do {
                    try file.writeNetworkSetting("\(family)/conf/\(interface)/ignore_routes_with_linkdown", "1")
                } catch where family == "ipv6" && error.errno == ENOENT {
                    // No IPv6 in the namespace: no IPv6 routes to stop using.
                }
            }
            if NetworkSettings.read(keepAddresses) == "0" {
                _ = NetworkSettings.write(keepAddresses, "2")
            }
            // Already down (a restarted daemon finds it so): a change that changes nothing is refused.
            if peer.isUp { try host.setDown(peer.name) }
        } else {
            if !peer.isUp { try host.setUp(peer.name) }
            if NetworkSettings.read(keepAddresses) == "2" {
                _ = NetworkSettings.write(keepAddresses, "0")
            }
            for family in ["ipv4", "ipv6"] {
                try? file.writeNetworkSetting("\(family)/conf/\(interface)/ignore_routes_with_linkdown", "0")
            }
        }
        try awaitRunning(!down, interface, in: inside)
    }

    /// Waits until the kernel's link watch has seen the change of carrier on `interface` (at most
    /// `linkWatchLimit`): until then its routes are not flagged down nor back, and a connection
    /// made at once would still use them (or not yet), so the change is not in force.
    private func awaitRunning(_ running: Bool, _ interface: String, in socket: NetlinkSocket) throws(NetlinkError) {
        let deadline = ContinuousClock.now + Self.linkWatchLimit
        while try socket.link(named: interface)?.isRunning != running, ContinuousClock.now < deadline {
            usleep(10_000)
        }
    }

    /// The kernel's link watch runs a change at most a second after the one before it.
    static let linkWatchLimit = Duration.seconds(2)

    /// The namespace, opened for one call (and checked to be the same one still); `nil` for the daemon's own.
    private func namespaceFile() throws(NetlinkError) -> NetworkNamespaceFile? {
        guard let namespace else { return nil }
        return try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity)
    }

    public func answerQueues(_ queues: [UInt16: QueueDuty], forTable table: String) throws(NetlinkError) -> [UInt16: QueueDuty] {
        guard let responder else {
            guard queues.isEmpty else {
                throw NetlinkError(code: .other, operation: "take queued packets", errno: ENOSYS, reason: "this linkcondd has no queue responder")
            }
            return [:]
        }
        return try responder.answer(queues, forTable: table, inNamespaceAt: namespace?.path, identity: namespace?.identity)
    }
}
