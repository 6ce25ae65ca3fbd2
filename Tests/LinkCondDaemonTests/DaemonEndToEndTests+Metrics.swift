import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import ShapingTestSupport
import Testing

extension DaemonEndToEndTests {
    /// One HTTP/1.1 request over TCP to 127.0.0.1:`port`, and the whole answer.
    func tcpRequest(_ request: String, port: Int) throws -> String {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0, "connect: errno \(errno)")
        let bytes = Array(request.utf8)
        try #require(send(descriptor, bytes, bytes.count, 0) == bytes.count)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test("--metrics-listen: GET /metrics over TCP on loopback, and nothing else there")
    func metricsListener() async throws {
        let port = Int.random(in: 20_000...60_000)
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"]), metricsListen: .tcp(host: "127.0.0.1", port: port)) { client, _ in
            _ = try await client.activate("Slow Net")
            let metrics = try tcpRequest("GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", port: port)
            #expect(metrics.hasPrefix("HTTP/1.1 200 OK"))
            #expect(metrics.contains("Content-Type: text/plain; version=0.0.4"))
            #expect(metrics.contains(#"linkcond_condition_active{condition="eth0",profile="Slow Net"} 1"#))
            let status = try tcpRequest("GET /v1/status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", port: port)
            #expect(status.hasPrefix("HTTP/1.1 404"))
            let change = try tcpRequest("DELETE /v1/condition HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", port: port)
            #expect(change.hasPrefix("HTTP/1.1 404"))
            #expect(try await client.status().active, "nothing changed through the metrics address")
        }
    }

    @Test("--metrics-listen takes a loopback address and a port, and says how to write one")
    func metricsListenerAddress() throws {
        #expect(try SocketSource.metricsListener(parsing: "127.0.0.1:9464") == .tcp(host: "127.0.0.1", port: 9464))
        #expect(try SocketSource.metricsListener(parsing: "[::1]:9464") == .tcp(host: "::1", port: 9464))
        for (text, problem) in [
            ("0.0.0.0:9464", "not a loopback address"), ("192.0.2.1:80", "not a loopback address"), ("127.0.0.1", "no port"),
            ("127.0.0.1:0", "from 1 to 65535"), ("[::1]9464", "brackets"), ("::1:9464", "no port"), ("localhost:9464", "not an IP address"),
        ] {
            let error = #expect(throws: DaemonError.self) { try SocketSource.metricsListener(parsing: text) }
            #expect(error?.message.contains(problem) == true, "\(text): \(error?.message ?? "")")
        }
    }
}
