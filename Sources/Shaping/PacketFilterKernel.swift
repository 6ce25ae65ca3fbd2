import Glibc
import Netlink

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
}

/// The kernel's nftables, through a libnftables context made for each call: in the daemon's own
/// namespace, or inside another one (entered for the call, as the tc kernel of that namespace
/// is, so that nothing held keeps a container's namespace alive).
public final class NFTablesKernel: PacketFilterKernel {
    private let namespace: (path: String, identity: NamespaceIdentity)?

    public init(namespaceAt path: String? = nil, identity: NamespaceIdentity? = nil) {
        if let path, let identity {
            self.namespace = (path, identity)
        } else {
            self.namespace = nil
        }
    }

    public var isLoaded: Bool { access("/sys/module/nf_tables", F_OK) == 0 }

    public func run(_ commands: String) throws(NetlinkError) -> String {
        guard let namespace else { return try NFTablesCommands.run(commands) }
        let file = try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity)
        return try file.whileInside("run nftables commands") { () -> Result<String, NetlinkError> in
            Result { () throws(NetlinkError) -> String in try NFTablesCommands.run(commands) }
        }.get()
    }

    public func setUnreachableRules(_ present: Bool) throws(NetlinkError) {
        let socket = if let namespace {
            try NetlinkSocket(in: try NetworkNamespaceFile(path: namespace.path, expected: namespace.identity))
        } else {
            try NetlinkSocket()
        }
        for family in [AF_INET, AF_INET6] {
            let rule = UnreachableRule(family: family, mark: FailureRuleset.unreachableMark, priority: FailureRuleset.unreachableRulePriority)
            if present {
                try socket.addUnreachableRule(rule)
            } else {
                try socket.deleteUnreachableRule(rule)
            }
        }
    }
}
