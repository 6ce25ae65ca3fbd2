import CNetlink
import Glibc

/// The one owner of a libnl route socket.
///
/// `nl_sock` has no locking, so a socket must stay with a single owner (an actor, or one
/// event-loop thread); the type is deliberately not `Sendable`. Every call is synchronous:
/// it sends one request and waits for the kernel's acknowledgement.
public final class NetlinkSocket {
    let handle: OpaquePointer
    /// Filled by the shim's error callback: the kernel's errno and extack text of the last refusal.
    private let refusal: UnsafeMutablePointer<linkcond_kernel_refusal>

    /// A route socket in the daemon's own network namespace.
    public convenience init() throws(NetlinkError) {
        try self.init { socket throws(NetlinkError) in
            let connected = nl_connect(socket, NETLINK_ROUTE)
            guard connected >= 0 else {
                throw NetlinkError(libnlCode: connected, operation: "connect netlink route socket", refusal: nil)
            }
        }
    }

    /// A route socket in the network namespace `namespace` is: it stays there for its whole
    /// life, and keeps the namespace alive while open.
    public convenience init(in namespace: NetworkNamespaceFile) throws(NetlinkError) {
        try self.init { socket throws(NetlinkError) in
            var systemErrno: Int32 = 0
            var stranded: Int32 = 0
            let connected = linkcond_connect_in_namespace(socket, namespace.descriptor, &systemErrno, &stranded)
            if stranded != 0 {
                // The thread is in another namespace now: every socket it opened later would
                // be there too. Nothing is safe to do but stop.
                fatalError("cannot return to the daemon's network namespace after entering \(namespace.path)")
            }
            if systemErrno != 0 {
                // setns answers EINVAL for a file that is not a network namespace.
                throw NetlinkError(
                    code: systemErrno == EPERM ? .notPermitted : (systemErrno == EINVAL ? .invalid : .other),
                    operation: "enter the network namespace \(namespace.path)", errno: systemErrno,
                    reason: systemErrno == EINVAL ? "not a network namespace" : String(cString: strerror(systemErrno))
                )
            }
            guard connected >= 0 else {
                throw NetlinkError(libnlCode: connected, operation: "connect a netlink route socket in \(namespace.path)", refusal: nil)
            }
        }
    }

    private init(connectingWith connect: (OpaquePointer) throws(NetlinkError) -> Void) throws(NetlinkError) {
        guard let socket = nl_socket_alloc() else {
            throw NetlinkError(code: .socket, operation: "open netlink socket", reason: "out of memory")
        }
        do {
            try connect(socket)
        } catch {
            nl_socket_free(socket)
            throw error
        }
        let refusal = UnsafeMutablePointer<linkcond_kernel_refusal>.allocate(capacity: 1)
        refusal.initialize(to: linkcond_kernel_refusal())
        _ = linkcond_capture_refusals(socket, refusal)
        self.handle = socket
        self.refusal = refusal
    }

    deinit {
        nl_socket_free(handle)
        refusal.deallocate()
    }

    /// Runs one libnl call and turns a negative result into a `NetlinkError` that names
    /// `operation` and carries the kernel's reason.
    func perform(_ operation: @autoclosure () -> String, _ call: (OpaquePointer) -> Int32) throws(NetlinkError) {
        refusal.pointee.error = 0
        refusal.pointee.message.0 = 0
        let result = call(handle)
        if result < 0 {
            throw NetlinkError(libnlCode: result, operation: operation(), refusal: refusal.pointee)
        }
    }
}
