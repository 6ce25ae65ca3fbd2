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

    public init() throws(NetlinkError) {
        guard let socket = nl_socket_alloc() else {
            throw NetlinkError(code: .socket, operation: "open netlink socket", reason: "out of memory")
        }
        let refusal = UnsafeMutablePointer<linkcond_kernel_refusal>.allocate(capacity: 1)
        refusal.initialize(to: linkcond_kernel_refusal())
        let connected = nl_connect(socket, NETLINK_ROUTE)
        guard connected >= 0 else {
            nl_socket_free(socket)
            refusal.deallocate()
            throw NetlinkError(libnlCode: connected, operation: "connect netlink route socket", refusal: nil)
        }
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
