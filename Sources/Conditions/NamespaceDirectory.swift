import HostFacts
import LinkCondVocabulary
import Logging
import Netlink
import Shaping

/// The daemon's way into other network namespaces, and what it reads there: which namespace a
/// path names now, where its default route leaves, and linkcond's objects in one that a
/// condition's path no longer leads to. Without kernels (a test's daemon), conditions in other
/// namespaces are refused.
struct NamespaceDirectory {
    /// The daemon's own network namespace, which a condition id names by the interface alone.
    static let ownNamespacePath = "/proc/self/ns/net"

    let kernels: (any NamespaceKernels)?
    let logger: Logger

    /// Which network namespace `namespace` names now.
    func identity(of namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> NamespaceIdentity {
        guard let kernels else { throw ConditionsRefusal(NamespaceTargetsUnavailableError()) }
        do {
            return try kernels.identity(at: namespace.path)
        } catch {
            throw ConditionsRefusal(UnknownNamespaceError(namespace: namespace, reason: error.reason))
        }
    }

    /// Whether `identity` is the daemon's own namespace, which has ids of its own.
    func isDaemonsOwn(_ identity: NamespaceIdentity?) -> Bool {
        identity == (try? kernels?.identity(at: Self.ownNamespacePath))
    }

    /// The interface the default route of `namespace` leaves by, IPv4's before IPv6's.
    func defaultRouteInterface(in namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> String {
        guard let kernels else { throw ConditionsRefusal(NamespaceTargetsUnavailableError()) }
        let tables: (ipv4: String, ipv6: String)
        do {
            tables = try kernels.routeTables(at: namespace.path)
        } catch {
            throw ConditionsRefusal(UnknownNamespaceError(namespace: namespace, reason: error.reason))
        }
        guard let interface = DefaultRoute.interface(ipv4RouteTable: tables.ipv4, ipv6RouteTable: tables.ipv6) else {
            throw ConditionsRefusal(NoDefaultRouteInNamespaceError(namespace: namespace))
        }
        logger.info("\(namespace): the interface of its default route is \(interface)")
        return interface
    }

    /// An engine that works inside the namespace `identity`, through `path`; the daemon's own
    /// `engine` without kernels to reach it.
    func engine(at path: String, identity: NamespaceIdentity, else engine: ShapingEngine) -> ShapingEngine {
        guard let kernels else { return engine }
        return ShapingEngine(kernel: kernels.kernel(at: path, identity: identity), filter: kernels.filter(at: path, identity: identity), logger: logger)
    }

    /// Whether `condition`'s namespace is gone (or its path now names another): `nil` when it
    /// could not be told, which the caller tries again later.
    func hasVanished(_ condition: Condition) -> Bool? {
        guard let kernels, let namespace = condition.id.namespace else { return false }
        do {
            return try kernels.identity(at: namespace.path) != condition.namespaceIdentity
        } catch where error.code == .namespaceGone {
            return true
        } catch {
            logger.warning("cannot look at the network namespace of \(condition.id): \(error); trying again in a second")
            return nil
        }
    }

    /// Removes linkcond's objects from the namespace `condition` was made in when its own path
    /// no longer leads there but the namespace lives on (the PID it was named by exited while
    /// the container's other processes run; `ip netns delete` while a process is inside).
    /// Returns the history's detail for the end: `gone`, and through which path the objects
    /// were removed when the namespace lives on.
    func endOfNamespace(_ condition: Condition, gone: String) -> String {
        guard let kernels, let identity = condition.namespaceIdentity, let path = kernels.path(of: identity) else { return gone }
        let engine = ShapingEngine(kernel: kernels.kernel(at: path, identity: identity), filter: kernels.filter(at: path, identity: identity), logger: logger)
        do {
            try engine.install(nil, on: condition.target)
            try engine.remove(condition.target)
        } catch {
            logger.error("\(condition.id): its namespace lives on (\(path)), but linkcond's objects there could not be removed: \(error)")
        }
        return "\(gone); the namespace lives on, linkcond's objects in it were removed through \(path)"
    }
}
