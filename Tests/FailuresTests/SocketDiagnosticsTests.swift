@testable import Failures
import Glibc
import Testing

/// The kernel's sock_diag on this machine: a TCP connection over loopback, made by the test
/// itself, found and destroyed, and what each end sees. Needs root (CAP_NET_ADMIN) and a kernel
/// built with CONFIG_INET_DIAG_DESTROY (Debian's is); the kernel suite measures it in VMs.
@Suite("sock_diag: a connection found and destroyed")
struct SocketDiagnosticsTests {
    /// A listener on 127.0.0.1, a client connected to it, and the accepted end.
    private func loopbackPair() throws -> (listener: Int32, client: Int32, server: Int32, port: UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } } == 0)
        try #require(listen(listener, 1) == 0)
        try #require(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } } == 0)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } } == 0)
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        return (listener, client, server, UInt16(bigEndian: address.sin_port))
    }

    @Test(
        "The client's end destroyed: its read fails with ECONNABORTED, the server's with ECONNRESET; the listener stays",
        .enabled(if: geteuid() == 0, "destroying a socket needs CAP_NET_ADMIN: make test runs as root")
    )
    func destroyOne() throws {
        let pair = try loopbackPair()
        defer { [pair.listener, pair.client, pair.server].forEach { close($0) } }
        let diagnostics = try SocketDiagnostics()
        try diagnostics.checkDestroyIsSupported()
        let (connections, found) = try diagnostics.resettableConnections()
        #expect(found >= 2)
        let client = try #require(connections.first { $0.remote.port == pair.port && $0.remote.isLoopback })
        #expect(!connections.contains { $0.local.port == pair.port && $0.remote.port == 0 }, "a listener is never listed")

        let selection = ConnectionSelection(.peer(PeerMatchForTest.loopback(port: pair.port)), exemptions: .default)
        #expect(selection.takes(client))
        #expect(try diagnostics.destroy(client))
        #expect(try diagnostics.destroy(client) == false, "gone once destroyed")

        var byte: UInt8 = 0
        #expect(recv(pair.client, &byte, 1, Int32(MSG_DONTWAIT)) == -1 && errno == ECONNABORTED)
        var waiting = pollfd(fd: pair.server, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiting, 1, 2000) == 1)
        #expect(recv(pair.server, &byte, 1, Int32(MSG_DONTWAIT)) == -1 && errno == ECONNRESET)
    }
}
