import Netlink
import Shaping

/// Network namespaces in memory, each with a `FakeKernel` of its own: what a container's
/// namespace is to the daemon, without root.
public final class FakeNamespaces: NamespaceKernels, @unchecked Sendable {
    public private(set) var namespaces: [String: (identity: NamespaceIdentity, kernel: FakeKernel)] = [:]
    /// Each namespace's default route's interface, by identity; a namespace missing here has
    /// no default route.
    public var defaultRoutes: [NamespaceIdentity: String] = [:]
    /// The paths whose route tables were read, in order: each read enters the namespace.
    public private(set) var routeTableReads: [String] = []
    private var nextInode: UInt64 = 4_026_532_000

    public init() {}

    /// Makes (or remakes, as a new namespace) the one at `path`, with these interfaces.
    /// `defaultRoute`: the interface its default route leaves by, the first one by default.
    @discardableResult
    public func make(at path: String, interfaces: [String] = ["eth0"], defaultRoute: String? = nil) -> FakeKernel {
        nextInode += 1
        let kernel = FakeKernel(interfaces: interfaces)
        let identity = NamespaceIdentity(device: 4, inode: nextInode)
        namespaces[path] = (identity, kernel)
        defaultRoutes[identity] = defaultRoute ?? interfaces.first
        return kernel
    }

    /// Another path to the namespace at `path` (a process in it); with `making`, the namespace
    /// is made first at `path`.
    public func alias(_ other: String, to path: String, making: Bool = false) {
        if making { make(at: path) }
        namespaces[other] = namespaces[path]
    }

    /// The namespace ends: its path no longer opens.
    public func remove(at path: String) {
        namespaces[path] = nil
    }

    public func kernel(at path: String, identity: NamespaceIdentity) -> any TrafficControlKernel {
        CheckedKernel(namespaces: self, path: path, identity: identity)
    }

    public func identity(at path: String) throws(NetlinkError) -> NamespaceIdentity {
        guard let namespace = namespaces[path] else {
            throw NetlinkError(code: .namespaceGone, operation: "open the network namespace \(path)", errno: 2, reason: "no such namespace")
        }
        return namespace.identity
    }

    public func path(of identity: NamespaceIdentity) -> String? {
        namespaces.filter { $0.value.identity == identity }.keys.sorted().first
    }

    /// The route tables as `/proc/net/route` and `/proc/net/ipv6_route` show them: a default
    /// route over IPv4 only, with a link-local route before it.
    public func routeTables(at path: String) throws(NetlinkError) -> (ipv4: String, ipv6: String) {
        let identity = try identity(at: path)
        routeTableReads.append(path)
        var ipv4 = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        if let device = defaultRoutes[identity] {
            ipv4 += "\(device)\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
            ipv4 += "\(device)\t00000000\t0102A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        }
        return (ipv4, "")
    }

    /// Like `NamespacedKernel`: each call checks that the path is still the same namespace.
    private final class CheckedKernel: TrafficControlKernel {
        let namespaces: FakeNamespaces
        let path: String
        let identity: NamespaceIdentity

        init(namespaces: FakeNamespaces, path: String, identity: NamespaceIdentity) {
            self.namespaces = namespaces
            self.path = path
            self.identity = identity
        }

        private func entered() throws(NetlinkError) -> FakeKernel {
            guard let namespace = namespaces.namespaces[path], namespace.identity == identity else {
                throw NetlinkError(code: .namespaceGone, operation: "open the network namespace \(path)", reason: "the namespace is gone")
            }
            return namespace.kernel
        }

        func execute(_ step: TrafficStep) throws(NetlinkError) {
            try entered().execute(step)
        }

        func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
            try entered().survey(target)
        }
    }
}
