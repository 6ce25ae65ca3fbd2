import CNetlink
import Glibc

/// Which namespace a namespace file is: the nsfs inode, the same for every path to it.
public struct NamespaceIdentity: Hashable, Sendable, Codable, CustomStringConvertible {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity of the nsfs file `status` describes.
    init(_ status: stat) {
        self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// `net:[4026532281]`, as `/proc/PID/ns/net` reads.
    public var description: String { "net:[\(inode)]" }
}

/// An open network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`), held only while a
/// socket is made in it: an open one keeps its namespace alive, which a container's must not be
/// by linkcond.
public final class NetworkNamespaceFile {
    public let path: String
    public let identity: NamespaceIdentity
    let descriptor: Int32

    /// Opens `path`; with `expected`, only if it is still that namespace (a name that now
    /// means another namespace, or a PID reused, is the old one gone).
    public init(path: String, expected: NamespaceIdentity? = nil) throws(NetlinkError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = errno
            let gone = error == ENOENT || error == ESRCH
            throw NetlinkError(
                code: gone ? .namespaceGone : (error == EACCES || error == EPERM ? .notPermitted : .other),
                operation: "open the network namespace \(path)", errno: error,
                reason: gone ? "no such namespace" : String(cString: strerror(error))
            )
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = errno
            close(descriptor)
            throw NetlinkError(code: .other, operation: "read the network namespace \(path)", errno: error, reason: String(cString: strerror(error)))
        }
        let identity = NamespaceIdentity(status)
        if let expected, expected != identity {
            close(descriptor)
            throw NetlinkError(
                code: .namespaceGone, operation: "open the network namespace \(path)",
                reason: "the namespace this condition was made in (\(expected)) is gone; \(path) is now \(identity)"
            )
        }
        self.path = path
        self.identity = identity
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}

extension NetworkNamespaceFile {
    /// The file `/proc/thread-self/net/NAME` (`route`, `ipv6_route`) as this namespace sees
    /// it, up to `limit` bytes: a thread enters the namespace only to open it.
    public func procNetFile(_ name: String, limit: Int = 256 * 1024) throws(NetlinkError) -> String {
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = try entering("read /proc/net/\(name)", failed: { $0 < 0 }) { systemErrno, stranded in
            buffer.withUnsafeMutableBytes { bytes in
                linkcond_read_in_namespace(
                    descriptor, "/proc/thread-self/net/\(name)", bytes.baseAddress?.assumingMemoryBound(to: CChar.self), limit,
                    &systemErrno, &stranded
                )
            }
        }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// A socket (`socket(2)`'s arguments) made inside this namespace, where it stays for its
    /// whole life: a thread enters the namespace only to make it. The caller closes it.
    public func socket(domain: Int32, type: Int32, protocol: Int32) throws(NetlinkError) -> Int32 {
        try entering("open a socket", failed: { $0 < 0 }) { systemErrno, stranded in
            linkcond_socket_in_namespace(descriptor, domain, type, `protocol`, &systemErrno, &stranded)
        }
    }

    /// What `body` returns, run on the calling thread while it is inside this namespace: for a
    /// library that opens its sockets as it goes (libnftables), every one of them is made here.
    /// `body` must not suspend or hand its work to another thread.
    public func whileInside<Value>(_ operation: String, _ body: () -> Value) throws(NetlinkError) -> Value {
        var value: Value?
        _ = try entering(operation, failed: { (own: Int32) in own < 0 }) { systemErrno, stranded in
            let own = linkcond_enter_namespace(descriptor, &systemErrno)
            guard own >= 0 else { return own }
            value = body()
            linkcond_leave_namespace(own, &stranded)
            return own
        }
        return value!
    }

    /// What `call` (a C function that enters this namespace for one system call, and says
    /// whether it could not come back) returns, or the error of `operation` when it `failed`.
    private func entering<Value>(
        _ operation: String, failed: (Value) -> Bool, _ call: (_ systemErrno: inout Int32, _ stranded: inout Int32) -> Value
    ) throws(NetlinkError) -> Value {
        var systemErrno: Int32 = 0
        var stranded: Int32 = 0
        let value = call(&systemErrno, &stranded)
        if stranded != 0 {
            // The thread is in another namespace now: every socket it opened later would be
            // there too. Nothing is safe to do but stop.
            fatalError("cannot return to the daemon's network namespace after entering \(path)")
        }
        guard !failed(value) else {
            throw NetlinkError(
                code: systemErrno == EPERM ? .notPermitted : .other,
                operation: "\(operation) in the network namespace \(path)", errno: systemErrno,
                reason: String(cString: strerror(systemErrno))
            )
        }
        return value
    }
}

extension NetworkNamespaceFile {
    /// Writes `value` to `/proc/sys/net/…` (`name`: `ipv4/conf/eth0/forwarding`) as this
    /// namespace sees it: a thread enters the namespace to open and write it.
    /// A setting that already has the value is not written again.
    public func writeNetworkSetting(_ name: String, _ value: String) throws(NetlinkError) {
        let error = try whileInside("write net.\(name)") { () -> Int32 in
            guard NetworkSettings.read(name) != value else { return 0 }
            return NetworkSettings.write(name, value)
        }
        if error != 0 { throw NetworkSettings.failure(error, writing: name) }
    }

    /// What `/proc/sys/net/NAME` says in this namespace, without its newline; `nil` when unreadable.
    public func networkSetting(_ name: String) throws(NetlinkError) -> String? {
        try whileInside("read net.\(name)") { NetworkSettings.read(name) }
    }
}

/// `/proc/sys/net/…` of the calling thread's network namespace.
public enum NetworkSettings {
    /// 0, or the errno of opening or writing it. A write the kernel asks to be tried again (a
    /// setting that takes the routing lock answers EAGAIN when it is busy) is, a few times.
    public static func write(_ name: String, _ value: String) -> Int32 {
        let bytes = Array((value + "\n").utf8)
        var error: Int32 = 0
        for attempt in 0..<5 {
            if attempt > 0 { usleep(20_000) }
            let descriptor = open("/proc/sys/net/" + name, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return errno }
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            error = written == bytes.count ? 0 : errno
            close(descriptor)
            guard error == EAGAIN || error == EINTR else { return error }
        }
        return error
    }

    public static func read(_ name: String) -> String? {
        let descriptor = open("/proc/sys/net/" + name, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }

    public static func failure(_ error: Int32, writing name: String) -> NetlinkError {
        NetlinkError(code: error == EPERM || error == EACCES ? .notPermitted : .other, operation: "write net.\(name)", errno: error, reason: String(cString: strerror(error)))
    }
}
