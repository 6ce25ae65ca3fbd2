import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOCore
import NIOPosix
import ShapingTestSupport
import Testing

/// The owner of a loopback TCP connection's other end, asked of the kernel's sock_diag, which
/// answers an unprivileged process about its own sockets; and the metrics listener counting
/// its connections by it.
@Suite("The user at the other end of a loopback TCP connection")
struct LoopbackPeerTests {
    let group = MultiThreadedEventLoopGroup.singleton

    /// A listening socket on `host`, and a connection of this process to it (left in the
    /// listener's backlog: the kernel completes it without an accept).
    func connection(to host: String, from client: String? = nil) async throws -> (server: any Channel, client: any Channel) {
        let server = try await ServerBootstrap(group: group).bind(host: host, port: 0).get()
        let port = try #require(server.localAddress?.port)
        let client = try await ClientBootstrap(group: group).connect(host: client ?? host, port: port).get()
        return (server, client)
    }

    @Test("The owner of this process's own connection is this process's uid", arguments: ["127.0.0.1", "::1"])
    func ownConnection(host: String) async throws {
        let (server, client) = try await connection(to: host)
        defer {
            client.close(promise: nil)
            server.close(promise: nil)
        }
        let peer = try #require(client.localAddress)
        let local = try #require(client.remoteAddress)
        #expect(LoopbackPeer.owner(of: peer, connectedTo: local) == .success(getuid()))
    }

    @Test("An IPv6 socket connected to an IPv4 listener (::ffff:127.0.0.1) is found as the listener sees it")
    func mappedAddress() async throws {
        let (server, client) = try await connection(to: "127.0.0.1", from: "::ffff:127.0.0.1")
        defer {
            client.close(promise: nil)
            server.close(promise: nil)
        }
        let peer = try SocketAddress(ipAddress: "127.0.0.1", port: try #require(client.localAddress?.port))
        let local = try #require(server.localAddress)
        #expect(LoopbackPeer.owner(of: peer, connectedTo: local) == .success(getuid()))
    }

    @Test("No socket at those addresses: a failure, no owner")
    func noSuchSocket() throws {
        let peer = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        let local = try SocketAddress(ipAddress: "127.0.0.1", port: 2)
        #expect(LoopbackPeer.owner(of: peer, connectedTo: local) == .failure(.init(code: ENOENT)))
        #expect(LoopbackPeer.LookupFailure(code: ENOENT).peerClosed, "on loopback, no socket there means its end is closed")
    }

    @Test("A closed connection's end, which no process holds, has no owner (the kernel reports uid 0 for it)")
    func closedConnection() async throws {
        let (server, client) = try await connection(to: "127.0.0.1")
        defer { server.close(promise: nil) }
        let peer = try #require(client.localAddress)
        let local = try #require(client.remoteAddress)
        try await client.close()
        // Closed first, it lingers as FIN_WAIT1, then FIN_WAIT2 in a TIME_WAIT minisocket: no inode.
        #expect(LoopbackPeer.owner(of: peer, connectedTo: local) == .failure(.init(code: ESRCH)))
        #expect(LoopbackPeer.LookupFailure(code: ESRCH).peerClosed)
        #expect(!LoopbackPeer.LookupFailure(code: EAGAIN).peerClosed, "no answer from the kernel says nothing about the peer")
    }

    @Test("Addresses of different families, or not IP: a failure")
    func otherFamilies() throws {
        let v4 = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        let v6 = try SocketAddress(ipAddress: "::1", port: 2)
        let unix = try SocketAddress(unixDomainSocketPath: "/x")
        #expect(LoopbackPeer.owner(of: v4, connectedTo: v6) == .failure(.init(code: EAFNOSUPPORT)))
        #expect(LoopbackPeer.owner(of: unix, connectedTo: unix) == .failure(.init(code: EAFNOSUPPORT)))
    }

    /// Connections made with blocking system calls, on NIO's thread pool: blocking on the
    /// cooperative pool (two threads here) stalled the other suites' tests for seconds, and
    /// held up the very server these wait for.
    enum Blocking {
        struct Failure: Error {
            let message: String
        }

        /// glibc's `setfsuid`, which its Swift module leaves out: the filesystem uid of the
        /// calling thread alone, where `seteuid` would change every thread of the test process.
        static let setfsuid = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setfsuid"), to: (@convention(c) (uid_t) -> CInt).self)

        /// A socket connected to 127.0.0.1:`port`, made as `owner` when that is given (root
        /// only): the kernel gives a socket the filesystem uid of the thread that makes it.
        static func connect(port: Int, as owner: uid_t?) throws -> CInt {
            if let owner { _ = setfsuid(owner) }
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let failure = errno
            if owner != nil { _ = setfsuid(getuid()) }
            guard descriptor >= 0 else { throw Failure(message: "socket: errno \(failure)") }
            // A server that never answers fails the test in 5 s rather than hanging it.
            var wait = timeval(tv_sec: 5, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                let failure = errno
                close(descriptor)
                throw Failure(message: "connect: errno \(failure)")
            }
            return descriptor
        }

        /// What a connection to 127.0.0.1:`port` is told, after `request` when given, until
        /// the server closes it.
        static func answer(port: Int, as owner: uid_t?, request: String?) throws -> String {
            let descriptor = try connect(port: port, as: owner)
            defer { close(descriptor) }
            if let request {
                let bytes = Array(request.utf8)
                guard send(descriptor, bytes, bytes.count, 0) == bytes.count else { throw Failure(message: "send: errno \(errno)") }
            }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { break }
                answer += buffer[..<count]
            }
            return String(decoding: answer, as: UTF8.self)
        }
    }

    func connect(port: Int, as owner: uid_t? = nil) async throws -> CInt {
        try await NIOThreadPool.singleton.runIfActive { try Blocking.connect(port: port, as: owner) }
    }

    func answer(port: Int, as owner: uid_t? = nil, request: String? = nil) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive { try Blocking.answer(port: port, as: owner, request: request) }
    }

    /// The address `descriptor` is bound to.
    func ownAddress(_ descriptor: CInt) throws -> SocketAddress {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        try #require(named == 0)
        return try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test("A socket another user made is that user's", .enabled(if: getuid() == 0, "making a socket as another user takes root"))
    func otherUsersSocket() async throws {
        let server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let descriptor = try await connect(port: try #require(server.localAddress?.port), as: 65534)
        defer { close(descriptor) }
        #expect(LoopbackPeer.owner(of: try ownAddress(descriptor), connectedTo: try #require(server.localAddress)) == .success(65534))
    }

    @Test("The metrics listener counts each connection against the uid at its other end, up to that user's limit")
    func listenerCountsByOwner() async throws {
        var limits = ControlLimits()
        limits.connectionsPerUser = 2
        limits.connectionsOfRoot = 2
        var router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"])), authorizer: TestDaemon.authorizer)
        router.metricsOnly = true
        let server = ControlServer(socket: .tcp(host: "127.0.0.1", port: 0), router: router, group: group, limits: limits, logger: .quiet)
        let listening = try await server.bind()
        let port = try #require(listening.channel.localAddress?.port)
        let serving = Task { try await server.serve(listening) }
        defer { serving.cancel() }
        var idle: [any Channel] = []
        for _ in 0..<2 {
            idle.append(try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get())
        }
        for _ in 0..<200 where server.limiter.open != [getuid(): 2] {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.limiter.open == [getuid(): 2], "counted against this process's uid, not the scrapers' shared one")
        let refused = try await answer(port: port)
        #expect(refused.hasPrefix("HTTP/1.1 503"))
        #expect(refused.contains(getuid() == 0 ? "root already has 2 connections open" : "uid \(getuid()) already has 2 connections open"), "\(refused)")
        for channel in idle {
            try await channel.close()
        }
        for _ in 0..<200 where !server.limiter.open.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.limiter.open.isEmpty, "each released when it closed")
        try await listening.channel.close()
        try await serving.value
    }

    @Test(
        "One user's idle connections to the metrics listener fill that user's share alone: another's scrape gets the metrics",
        .enabled(if: getuid() == 0, "connecting as another user takes root")
    )
    func floodOfOneUser() async throws {
        var limits = ControlLimits()
        limits.connectionsPerUser = 2
        var router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"])), authorizer: TestDaemon.authorizer)
        router.metricsOnly = true
        let server = ControlServer(socket: .tcp(host: "127.0.0.1", port: 0), router: router, group: group, limits: limits, logger: .quiet)
        let listening = try await server.bind()
        let port = try #require(listening.channel.localAddress?.port)
        let serving = Task { try await server.serve(listening) }
        defer { serving.cancel() }
        var flood: [CInt] = []
        defer { flood.forEach { close($0) } }
        for _ in 0..<2 {
            flood.append(try await connect(port: port, as: 65534))
        }
        for _ in 0..<200 where server.limiter.open != [65534: 2] {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.limiter.open == [65534: 2])
        let refused = try await answer(port: port, as: 65534)
        #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("uid 65534 already has 2 connections open"), "\(refused)")
        let scrape = try await answer(port: port, as: 1000, request: "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(scrape.hasPrefix("HTTP/1.1 200 OK"), "\(scrape.prefix(200))")
        try await listening.channel.close()
        try await serving.value
    }
}
