#if canImport(Glibc)
import Glibc
#endif
import IPAddressText
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Looks up the addresses a host name in `--to` stands for, once, when its condition is made.
///
/// The system resolver (`getaddrinfo`: /etc/hosts, then DNS as /etc/nsswitch.conf says, from the
/// daemon's own network namespace) blocks, so it runs on a thread pool, never on an event loop
/// or the conditioner; the answer is awaited at most `timeout`. A lookup that outlives it keeps
/// its pool thread until the resolver gives up (its own timeouts, resolv.conf's `timeout` and
/// `attempts`), and its answer is dropped.
package struct HostNameResolver: Sendable {
    /// Addresses beyond this many make the request fail: each address costs filters in every
    /// direction, and a name that stands for more is better named by its network.
    static let maximumAddresses = 32

    /// Where the deadline runs: one of the daemon's event loops.
    var timerLoop: any EventLoop
    var timeout: TimeAmount = .seconds(10)
    var pool: NIOThreadPool = .singleton
    /// The blocking lookup: `getaddrinfo`, or a test's stand-in.
    var lookUp: @Sendable (String) throws(HostNameError) -> [[UInt8]] = HostNameResolver.systemLookUp

    /// The distinct addresses of `name`, IPv4 before IPv6, each in network order; never empty,
    /// never a loopback address (a local server is named by its address, and lives on `lo`).
    package func addresses(of name: String) async throws(HostNameError) -> [[UInt8]] {
        let answer: Result<[[UInt8]], HostNameError> = await withCheckedContinuation { continuation in
            let pending = NIOLockedValueBox<CheckedContinuation<Result<[[UInt8]], HostNameError>, Never>?>(continuation)
            let finish: @Sendable (Result<[[UInt8]], HostNameError>) -> Void = { result in
                pending.withLockedValue { waiting in
                    waiting?.resume(returning: result)
                    waiting = nil
                }
            }
            let timer = timerLoop.scheduleTask(in: timeout) {
                finish(.failure(HostNameError(name: name, code: .timedOut, detail: "no answer within \(timeout.seconds) s")))
            }
            pool.submit { [lookUp] state in
                guard state == .active else {
                    finish(.failure(HostNameError(name: name, code: .unavailable, detail: "the daemon is stopping")))
                    return
                }
                let result = Result { () throws(HostNameError) -> [[UInt8]] in try lookUp(name) }
                timer.cancel()
                finish(result)
            }
        }
        return try Self.checked(answer.get(), of: name)
    }

    /// The addresses as a condition takes them: sorted and distinct, within the limit, none on
    /// loopback.
    static func checked(_ addresses: [[UInt8]], of name: String) throws(HostNameError) -> [[UInt8]] {
        let distinct = Set(addresses).sorted { $0.count != $1.count ? $0.count < $1.count : $0.lexicographicallyPrecedes($1) }
        guard !distinct.isEmpty else {
            throw HostNameError(name: name, code: .notFound, detail: "it has no IPv4 or IPv6 address")
        }
        guard distinct.count <= maximumAddresses else {
            throw HostNameError(name: name, code: .tooManyAddresses, detail: "it has \(distinct.count) addresses, more than the \(maximumAddresses) a condition takes; name its network instead (--to 203.0.113.0/24)")
        }
        if let loopback = distinct.first(where: isLoopbackAddress) {
            throw HostNameError(name: name, code: .loopback, detail: "it is this machine's own (\(formatIPAddress(loopback))); a local server's port is named by its address, --to 127.0.0.1:8080 or --to [::1]:8080")
        }
        return distinct
    }

    /// glibc's `EAI_NODATA` (the name exists, without an address), which it declares only under
    /// `_GNU_SOURCE`.
    static let eaiNoData: Int32 = -5

    /// `getaddrinfo` for every address family, one answer per address.
    @Sendable static func systemLookUp(_ name: String) throws(HostNameError) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            let detail = String(cString: gai_strerror(status))
            switch status {
            case EAI_NONAME, Self.eaiNoData: throw HostNameError(name: name, code: .notFound, detail: detail)
            default: throw HostNameError(name: name, code: .unavailable, detail: detail)
            }
        }
        var addresses: [[UInt8]] = []
        var entry = list
        while let current = entry?.pointee {
            if let socketAddress = current.ai_addr {
                switch current.ai_family {
                case AF_INET:
                    socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        addresses.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
                    }
                case AF_INET6:
                    socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        addresses.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
                    }
                default:
                    break
                }
            }
            entry = current.ai_next
        }
        return addresses
    }
}

extension TimeAmount {
    fileprivate var seconds: Int64 { nanoseconds / 1_000_000_000 }
}

/// A host name in `--to` that did not give addresses a condition can match.
public struct HostNameError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No such name, or it has no address (a 400: the request names nothing).
        case notFound = "unknown-host"
        /// The resolver failed or did not answer in time (a 503: try again).
        case unavailable = "host-lookup-failed"
        case timedOut = "host-lookup-timed-out"
        case tooManyAddresses = "too-many-addresses"
        case loopback = "loopback-host"
    }

    public var name: String
    public var code: Code
    public var detail: String

    public var description: String {
        switch code {
        case .notFound: "cannot look up '\(name)': \(detail)"
        case .unavailable, .timedOut: "cannot look up '\(name)' now: \(detail); try again"
        case .tooManyAddresses, .loopback: "'\(name)' cannot be a peer: \(detail)"
        }
    }
}

extension HostNameResolver {
    /// The system's resolver, its timeouts on `timerLoop`.
    package static func system(timerLoop: any EventLoop) -> HostNameResolver {
        HostNameResolver(timerLoop: timerLoop)
    }
}
