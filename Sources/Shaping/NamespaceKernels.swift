import Netlink

/// Reaches network namespaces other than the daemon's own: a condition on a container's
/// interface is shaped from inside the container's namespace.
public protocol NamespaceKernels: AnyObject {
    /// The kernel of the namespace at `path`, which must still be `identity` at every call;
    /// otherwise the call fails with `NetlinkError.Code.namespaceGone`.
    func kernel(at path: String, identity: NamespaceIdentity) -> any TrafficControlKernel
    /// Which namespace `path` is now.
    func identity(at path: String) throws(NetlinkError) -> NamespaceIdentity
    /// Another file that is the namespace `identity`, while anything keeps it alive.
    func path(of identity: NamespaceIdentity) -> String?
    /// The namespace's IPv4 and IPv6 route tables as its `/proc/net/route` and
    /// `/proc/net/ipv6_route` read: where its default route leads.
    func routeTables(at path: String) throws(NetlinkError) -> (ipv4: String, ipv6: String)
    /// The nftables of the namespace at `path`, for a condition's failures; `nil` where it cannot be reached.
    func filter(at path: String, identity: NamespaceIdentity) -> (any PacketFilterKernel)?
}

extension NamespaceKernels {
    public func filter(at path: String, identity: NamespaceIdentity) -> (any PacketFilterKernel)? { nil }

    /// A way into the namespace `identity`: `preferred` while it still leads there, else any
    /// other file that does; `nil` once the namespace is gone.
    public func path(of identity: NamespaceIdentity, preferring preferred: String) -> String? {
        if (try? self.identity(at: preferred)) == identity { return preferred }
        return path(of: identity)
    }
}

/// The real namespaces, through a socket made inside each for every call.
public final class NetlinkNamespaces: NamespaceKernels {
    private let responder: (any QueuedPacketAnswering)?

    /// `responder` takes the queued packets of every namespace's tables.
    public init(responder: (any QueuedPacketAnswering)? = nil) {
        self.responder = responder
    }

    public func kernel(at path: String, identity: NamespaceIdentity) -> any TrafficControlKernel {
        NamespacedKernel(path: path, identity: identity)
    }

    public func identity(at path: String) throws(NetlinkError) -> NamespaceIdentity {
        try NetworkNamespaceFile(path: path).identity
    }

    public func path(of identity: NamespaceIdentity) -> String? {
        NetworkNamespaceFile.path(of: identity)
    }

    public func filter(at path: String, identity: NamespaceIdentity) -> (any PacketFilterKernel)? {
        NFTablesKernel(namespaceAt: path, identity: identity, responder: responder)
    }

    public func routeTables(at path: String) throws(NetlinkError) -> (ipv4: String, ipv6: String) {
        let file = try NetworkNamespaceFile(path: path)
        return (try file.procNetFile("route"), try file.procNetFile("ipv6_route"))
    }
}

/// The kernel of another network namespace, entered anew for every call: a socket held open
/// would keep the namespace alive after its container ended, and a namespace whose name now
/// means another one is never touched.
public final class NamespacedKernel: TrafficControlKernel {
    public let path: String
    public let identity: NamespaceIdentity

    public init(path: String, identity: NamespaceIdentity) {
        self.path = path
        self.identity = identity
    }

    public func execute(_ step: TrafficStep) throws(NetlinkError) {
        try entered().execute(step)
    }

    public func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
        try entered().survey(target)
    }

    private func entered() throws(NetlinkError) -> NetlinkKernel {
        let file = try NetworkNamespaceFile(path: path, expected: identity)
        return NetlinkKernel(socket: try NetlinkSocket(in: file))
    }
}
