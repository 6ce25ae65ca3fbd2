/// Names one condition in `/v1/conditions/{id}`, the state file and the history: the interface
/// it shapes, and the network namespace that interface is in when it is not the daemon's.
///
/// As text: `eth0`, `netns/NAME/eth0` (a namespace of `ip netns`), `pid/PID/eth0` (the
/// namespace of a process, such as a container's), each optionally followed by `@PEER` for a
/// condition on only the traffic exchanged with that peer (`eth0@10.0.0.5:443`). `@PEER` alone
/// is on the daemon's own interface; the daemon answers with the full id.
public struct ConditionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Empty only in a request, before the daemon fills it in: its own interface for `@PEER`,
    /// the interface of the namespace's default route for `netns/NAME/` and `pid/PID/`.
    public var interface: String
    public var namespace: NetworkNamespaceReference?
    /// `nil`: the whole interface.
    public var peer: PeerSpec?

    public init(interface: String, namespace: NetworkNamespaceReference? = nil, peer: PeerSpec? = nil) {
        self.interface = interface
        self.namespace = namespace
        self.peer = peer
    }

    /// The condition of the whole interface this one shares a tree with.
    public var target: ConditionID {
        ConditionID(interface: interface, namespace: namespace)
    }

    /// Parses an id's text, checking every part as the kernel would.
    public init(parsing text: String) throws(NamespaceReferenceError) {
        if let at = text.lastIndex(of: "@") {
            let peerText = String(text[text.index(after: at)...])
            let peer: PeerSpec
            do {
                peer = try PeerSpec(parsing: peerText)
            } catch {
                throw NamespaceReferenceError(message: "the part after '@' \(error.problem) (\(peerText))")
            }
            let targetText = String(text[..<at])
            if targetText.isEmpty {
                self.init(interface: "", peer: peer)
                return
            }
            try self.init(parsing: targetText)
            guard self.peer == nil else { throw NamespaceReferenceError(message: "a condition id has at most one '@'") }
            self.peer = peer
            return
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            self.init(interface: try Self.interface(parts[0]))
        case 3 where parts[0] == "netns":
            let name = String(parts[1])
            if let problem = NetworkNamespaceReference.problem(name: name) {
                throw NamespaceReferenceError(message: problem)
            }
            self.init(interface: try Self.interface(orEmpty: parts[2]), namespace: .named(name))
        case 3 where parts[0] == "pid":
            let pid = try NetworkNamespaceReference.pid(parsing: parts[1]).get()
            self.init(interface: try Self.interface(orEmpty: parts[2]), namespace: .process(pid))
        default:
            throw NamespaceReferenceError(message: "a condition id is an interface (eth0), netns/NAME/[INTERFACE] or pid/PID/[INTERFACE], optionally followed by @PEER (eth0@10.0.0.5:443)")
        }
    }

    private static func interface(orEmpty text: Substring) throws(NamespaceReferenceError) -> String {
        text.isEmpty ? "" : try interface(text)
    }

    private static func interface(_ text: Substring) throws(NamespaceReferenceError) -> String {
        if let problem = InterfaceName.problem(String(text)) {
            throw NamespaceReferenceError(message: problem)
        }
        return String(text)
    }

    public var description: String {
        let target = namespace.map { "\($0)/\(interface)" } ?? interface
        return target + (peer.map { "@\($0)" } ?? "")
    }

    public static func < (lhs: ConditionID, rhs: ConditionID) -> Bool {
        lhs.description < rhs.description
    }
}
