/// Names one condition in `/v1/conditions/{id}`, the state file and the history: the interface
/// it shapes, and the network namespace that interface is in when it is not the daemon's.
///
/// As text: `eth0`, `netns/NAME/eth0` (a namespace of `ip netns`), `pid/PID/eth0` (the
/// namespace of a process, such as a container's).
public struct ConditionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var interface: String
    public var namespace: NetworkNamespaceReference?

    public init(interface: String, namespace: NetworkNamespaceReference? = nil) {
        self.interface = interface
        self.namespace = namespace
    }

    /// Parses an id's text, checking every part as the kernel would.
    public init(parsing text: String) throws(NamespaceReferenceError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            self.init(interface: try Self.interface(parts[0]))
        case 3 where parts[0] == "netns":
            let name = String(parts[1])
            if let problem = NetworkNamespaceReference.problem(name: name) {
                throw NamespaceReferenceError(message: problem)
            }
            self.init(interface: try Self.interface(parts[2]), namespace: .named(name))
        case 3 where parts[0] == "pid":
            let pid = try NetworkNamespaceReference.pid(parsing: parts[1]).get()
            self.init(interface: try Self.interface(parts[2]), namespace: .process(pid))
        default:
            throw NamespaceReferenceError(message: "a condition id is an interface (eth0), netns/NAME/INTERFACE or pid/PID/INTERFACE")
        }
    }

    private static func interface(_ text: Substring) throws(NamespaceReferenceError) -> String {
        if let problem = InterfaceName.problem(String(text)) {
            throw NamespaceReferenceError(message: problem)
        }
        return String(text)
    }

    public var description: String {
        namespace.map { "\($0)/\(interface)" } ?? interface
    }

    public static func < (lhs: ConditionID, rhs: ConditionID) -> Bool {
        lhs.description < rhs.description
    }
}
