import ControlAPI

/// A condition was asked for on an interface its network namespace does not have.
public struct UnknownInterfaceError: Error, Sendable, CustomStringConvertible {
    public var interface: String
    public var namespace: NetworkNamespaceReference?
    public var description: String {
        guard let namespace else { return "there is no interface '\(interface)' here; 'ip link' lists them" }
        let listing = switch namespace {
        case .named(let name): "ip -n \(name) link"
        case .process(let pid): "nsenter -t \(pid) -n ip link"
        }
        return "there is no interface '\(interface)' in \(namespace); '\(listing)' lists them"
    }
}

/// A condition was asked for in a network namespace that does not exist (or cannot be opened).
public struct UnknownNamespaceError: Error, Sendable, CustomStringConvertible {
    public var namespace: NetworkNamespaceReference
    public var reason: String
    public var description: String {
        let hint = switch namespace {
        case .named: "'ip netns list' lists the named ones"
        case .process: "give the PID of a process in it, such as a container's ('docker inspect -f {{.State.Pid}} NAME')"
        }
        return "cannot open the network namespace \(namespace) (\(namespace.path)): \(reason); \(hint)"
    }
}

/// This daemon was made without a way into other network namespaces (a test's).
public struct NamespaceTargetsUnavailableError: Error, Sendable, CustomStringConvertible {
    public var description: String { "this linkcondd cannot shape inside other network namespaces" }
}

/// The daemon already holds as many conditions as it takes.
public struct TooManyConditionsError: Error, Sendable, CustomStringConvertible {
    public var limit: Int
    public var description: String {
        "linkcondd already holds \(limit) conditions, its limit; switch one off first"
    }
}

/// Loopback carries each packet out and in on the same device: a whole-interface condition
/// there would shape every packet twice.
public struct LoopbackConditionError: Error, Sendable, CustomStringConvertible {
    public var description: String {
        "lo cannot have a condition of its own: each packet crosses it twice (out and back in), so every value would count double"
    }
}

/// A request names, through another namespace's name or a PID, an interface that another
/// condition id already covers: two conditions would fight over one device.
public struct AliasedConditionError: Error, Sendable, CustomStringConvertible {
    public var requested: ConditionID
    public var existing: ConditionID
    public var description: String {
        "\(requested) is the interface \(existing) already names (the same network namespace, reached another way); use \(existing)"
    }
}

/// A new condition on one peer would match exactly some packets another condition on the same
/// interface matches, at the same specificity: the kernel cannot order the two.
public struct OverlappingPeerError: Error, Sendable, CustomStringConvertible {
    public var requested: ConditionID
    public var existing: ConditionID
    public var description: String {
        "\(requested) matches some of the same packets as \(existing), exactly as specifically (the same address, prefix and port); change or remove \(existing), or name the peer so that one is more specific"
    }
}
