import LinkCondVocabulary

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

/// A condition in a network namespace was asked for without its interface, and the namespace
/// has no default route to take it from.
public struct NoDefaultRouteInNamespaceError: Error, Sendable, CustomStringConvertible {
    public var namespace: NetworkNamespaceReference
    public var description: String {
        "the network namespace \(namespace) has no default route to take the interface from; name the interface"
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

/// Loopback carries each packet out and in on the same device: only a local server's port tells
/// the packets towards it (leaving `lo` to that port) from its answers (arriving from it), so a
/// condition there without one would shape every packet twice.
public struct LoopbackConditionError: Error, Sendable, CustomStringConvertible {
    public var requested: ConditionID
    public var description: String {
        "\(requested): a condition on lo needs a local server's port (--to 127.0.0.1:8080, --to [::1]:8080): "
            + "each packet crosses lo twice, out and back in, and only the server's port tells which way it goes"
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

/// `linkcond next` on a condition that plays no scenario, or whose scenario is over.
package struct NoScenarioError: Error, CustomStringConvertible {
    var condition: String
    package var finished: Bool

    package var description: String {
        finished
            ? "the scenario on \(condition) has played out; its last profile stays in force until you change it"
            : "no scenario plays on \(condition); start one with linkcond play NAME"
    }
}

/// A scenario step that cannot be played: its profile is gone, or its lease ended.
struct ScenarioStepError: Error, CustomStringConvertible {
    var scenario: String
    var detail: String

    package var description: String { "scenario '\(scenario)': \(detail)" }
}

/// A reset that cannot be done here, or that the kernel refused: on a kernel built without
/// `CONFIG_INET_DIAG_DESTROY`, for a gateway device (its connections are forwarded, not this
/// machine's sockets), for a host name that no held condition has looked up.
public struct ResetError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        case unavailable
        case notPermitted
        case namespaceGone
        case kernelRefused
        case needsAddresses
    }

    public var reason: Reason
    public var condition: ConditionID
    public var detail: String

    public var description: String { "cannot reset the connections of \(condition): \(detail)" }
}

/// Why a packet capture of a condition cannot begin.
public struct CaptureRefusal: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        case tooMany
        case namespaceGone
    }

    public var reason: Reason
    public var condition: ConditionID
    public var detail: String

    public var description: String { "cannot capture the packets of \(condition): \(detail)" }
}
