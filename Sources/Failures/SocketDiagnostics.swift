import CSocketDiag
import Glibc
import Netlink

/// The kernel's sock_diag in one network namespace: its TCP connections, and destroying them
/// (`SOCK_DESTROY`, as `ss -K` does): the local socket fails with ECONNABORTED and the far end
/// gets a reset. The socket is made in the namespace and stays there.
public final class SocketDiagnostics {
    /// The most connections one listing keeps (about 60 bytes each, for the time of a reset);
    /// a namespace with more has the rest counted, and a reset takes them in further rounds.
    public static let listLimit = 65_536

    private let descriptor: Int32
    /// The namespace, for errors: "the daemon's own" or its path.
    private let place: String

    /// sock_diag of the daemon's own namespace.
    public init() throws(NetlinkError) {
        let descriptor = linkcond_sock_diag_open()
        guard descriptor >= 0 else {
            throw Self.error(-descriptor, operation: "open a sock_diag socket", object: "the daemon's network namespace")
        }
        self.descriptor = descriptor
        place = "the daemon's network namespace"
    }

    /// sock_diag of the namespace `namespace` is.
    public init(in namespace: NetworkNamespaceFile) throws(NetlinkError) {
        descriptor = try namespace.socket(domain: AF_NETLINK, type: Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), protocol: NETLINK_SOCK_DIAG)
        place = namespace.path
        let connected = linkcond_sock_diag_connect(descriptor)
        guard connected == 0 else {
            close(descriptor)
            throw Self.error(-connected, operation: "connect a sock_diag socket", object: place)
        }
    }

    deinit {
        close(descriptor)
    }

    /// The namespace's TCP connections that a reset may take (see `TCPState`), IPv4's and IPv6's;
    /// at most `listLimit`, and how many there were. Each family is counted first, so that the
    /// listing takes memory for the connections there are, not for the most there may be.
    public func resettableConnections() throws(NetlinkError) -> (connections: [TCPConnection], found: Int) {
        var connections: [TCPConnection] = []
        var total = 0
        for family in [AF_INET, AF_INET6] {
            let room = Self.listLimit - connections.count
            // Those that opened between the count and the listing are counted, and taken next round.
            let counted = try list(family: family, into: &connections, capacity: 0)
            total += try list(family: family, into: &connections, capacity: min(counted, room))
        }
        return (connections, total)
    }

    /// Lists the family's connections into `connections`, at most `capacity` of them; how many there were.
    private func list(family: Int32, into connections: inout [TCPConnection], capacity: Int) throws(NetlinkError) -> Int {
        var sockets = [linkcond_diag_socket](repeating: linkcond_diag_socket(), count: max(capacity, 1))
        var found = 0
        let result = linkcond_sock_diag_list(
            descriptor, UInt8(family), UInt8(IPPROTO_TCP), TCPState.resettableMask, &sockets, capacity, &found
        )
        guard result == 0 else {
            throw Self.error(-result, operation: "list the TCP connections", object: place)
        }
        connections += sockets.prefix(min(found, capacity)).map(TCPConnection.init)
        return found
    }

    /// Throws `unsupported` when this kernel cannot destroy sockets: a destroy of a socket that
    /// cannot exist (port 0, cookie 0, which the kernel never hands out) answers ENOENT where it
    /// can (ESTALE should a lookup find some socket, whose cookie then differs: nothing is
    /// destroyed), EOPNOTSUPP where it cannot; so a reset says so even when it finds nothing.
    public func checkDestroyIsSupported() throws(NetlinkError) {
        var nothing = linkcond_diag_socket()
        nothing.family = UInt8(AF_INET)
        nothing.protocol = UInt8(IPPROTO_TCP)
        let result = linkcond_sock_diag_destroy(descriptor, &nothing)
        guard result == -ENOENT || result == -ESTALE else {
            throw Self.error(result == 0 ? EBADMSG : -result, operation: "check that sockets can be destroyed", object: place)
        }
    }

    /// Destroys `connection`; false when it was gone already.
    public func destroy(_ connection: TCPConnection) throws(NetlinkError) -> Bool {
        var id = connection.kernelID
        let result = linkcond_sock_diag_destroy(descriptor, &id)
        switch -result {
        case 0: return true
        // Gone, or its addresses lead to another socket now (a listener on its port): either
        // way, not the connection listed.
        case ENOENT, ESTALE: return false
        default: throw Self.error(-result, operation: "destroy the TCP connection \(connection.local) → \(connection.remote)", object: place)
        }
    }

    private static func error(_ code: Int32, operation: String, object: String) -> NetlinkError {
        let reason = switch code {
        case EOPNOTSUPP: "this kernel cannot destroy sockets (it was built without CONFIG_INET_DIAG_DESTROY)"
        case EAGAIN: "the kernel did not answer"
        case EBADMSG: "the kernel's answer was not sock_diag's"
        default: String(cString: strerror(code))
        }
        return NetlinkError(
            code: code == EPERM || code == EACCES ? .notPermitted : (code == EOPNOTSUPP ? .unsupported : .other),
            operation: "\(operation) in \(object)", errno: code, reason: reason
        )
    }
}
