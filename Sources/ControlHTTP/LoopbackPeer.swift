import Conditions
import CSocketOwner
import Glibc
import NIOCore

/// The user at the other end of a TCP connection on loopback: the owner of that end's socket,
/// as the kernel's sock_diag reports it (the uid `ss -e` shows).
///
/// For the metrics listener's connection limit alone. TCP carries no credentials, and counting
/// every TCP client as one user let any local user take that one user's share with idle
/// connections, so that every Prometheus scrape got a 503 for as long as they stayed open. The
/// answer never authorizes anything: the listener serves `GET /metrics` alone, to whoever
/// connects.
///
/// The lookup is one request to the kernel, which answers it while handling it: a few system
/// calls, made on the event loop like `SO_PEERCRED`'s `getsockopt` for the control socket.
package enum LoopbackPeer {
    /// Why the owner of a connection's other end cannot be told.
    struct LookupFailure: Error, Equatable, CustomStringConvertible {
        /// The errno the lookup ended with.
        let code: Int32

        var description: String {
            switch code {
            case ENOENT: "no such socket on this host (another host or namespace, or already closed)"
            case ESRCH: "no process holds that socket any more"
            case EAGAIN: "the kernel did not answer"
            case EBADMSG: "the kernel's answer is not about that socket"
            default: String(cString: strerror(code))
            }
        }

        /// The other end is closed: no socket there, or one that no process holds. On loopback,
        /// where every peer is on this host and in this namespace, nobody can read an answer.
        var peerClosed: Bool {
            code == ENOENT || code == ESRCH
        }
    }

    /// The uid that owns the socket whose own address is `peer` and which is connected to
    /// `local` (the accepted socket's own address), or why there is none: a peer elsewhere, one
    /// already closed, addresses of different families or of neither IPv4 nor IPv6.
    static func owner(of peer: SocketAddress, connectedTo local: SocketAddress) -> Result<UInt32, LookupFailure> {
        var uid: UInt32 = 0
        let result: CInt = withSocketAddress(peer) { source in
            withSocketAddress(local) { destination in
                guard let source, let destination else { return -EAFNOSUPPORT }
                return linkcond_tcp_socket_owner(source, destination, &uid)
            }
        }
        return result == 0 ? .success(uid) : .failure(LookupFailure(code: -result))
    }

    /// `address` as the `struct sockaddr` C takes, or `nil` when it is neither IPv4 nor IPv6.
    private static func withSocketAddress<Result>(
        _ address: SocketAddress, _ body: (UnsafePointer<sockaddr>?) -> Result
    ) -> Result {
        switch address {
        case .v4(let v4):
            withUnsafePointer(to: v4.address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0) } }
        case .v6(let v6):
            withUnsafePointer(to: v6.address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0) } }
        case .unixDomainSocket:
            body(nil)
        }
    }
}
