@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@Suite("Time limits and malformed requests on one control connection")
struct ConnectionGuardTests {
    var limits: ControlLimits {
        var limits = ControlLimits()
        limits.idleTimeout = .seconds(30)
        limits.requestTimeout = .seconds(10)
        limits.responseTimeout = .seconds(10)
        return limits
    }

    /// A connection with the daemon's handlers, and what the server code above them received.
    func connection() throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandlers(ControlServer.httpHandlers(limits: limits))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/x")).wait()
        return (channel, loop)
    }

    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
        }
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        return text
    }

    @Test("A connection that sends nothing is closed after the idle timeout")
    func idle() throws {
        let (channel, loop) = try connection()
        loop.advanceTime(by: .seconds(29))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test("A request that never completes gets a JSON 408 after the request timeout, however slowly its bytes come")
    func slowRequest() throws {
        let (channel, loop) = try connection()
        for byte in "GET /v1/sta".utf8 {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            loop.advanceTime(by: .milliseconds(800))
        }
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(2))
        let answer = try written(channel)
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        #expect(answer.contains("\"code\" : \"request-timeout\""))
        #expect(!channel.isActive)
    }

    @Test("A complete request stops the clock; the idle timeout starts again after the answer")
    func wholeRequest() throws {
        let (channel, loop) = try connection()
        try channel.writeInbound(ByteBuffer(string: "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) != nil)
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive, "the daemon may take its time")
        let reply = ControlReply.json(["ok": true])
        for part in ConnectionGuard.parts(of: reply, closing: false) {
            try channel.writeOutbound(part)
        }
        #expect(try written(channel).hasPrefix("HTTP/1.1 200"))
        loop.advanceTime(by: .seconds(29))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test("Bytes that are not HTTP get a JSON 400 and the connection closes")
    func malformed() throws {
        let (channel, _) = try connection()
        _ = try? channel.writeInbound(ByteBuffer(string: "\u{01}\u{02} garbage\r\n\r\n"))
        let answer = try written(channel)
        #expect(answer.hasPrefix("HTTP/1.1 400"))
        #expect(answer.contains("\"code\" : \"bad-request\""))
        #expect(answer.contains("malformed HTTP request"))
        #expect(!channel.isActive)
    }

    @Test("A lease's connection may stay quiet for as long as the lease lasts")
    func lease() throws {
        let (channel, loop) = try connection()
        try channel.writeInbound(ByteBuffer(string: "POST /v1/leases HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"))
        channel.pipeline.fireUserInboundEventTriggered(ConnectionGuard.LeaseHeld())
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"])))
        loop.advanceTime(by: .hours(2))
        #expect(channel.isActive)
    }

    @Test("An answer the client does not take is abandoned after the response timeout")
    func unreadAnswer() throws {
        let (channel, loop) = try connection()
        try channel.writeInbound(ByteBuffer(string: "GET /v1/status HTTP/1.1\r\n\r\n"))
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        loop.advanceTime(by: .seconds(11))
        #expect(!channel.isActive)
    }
}

@Suite("Connections per user")
struct ConnectionLimiterTests {
    @Test("One user cannot take another's share, nor root's")
    func shares() {
        var limits = ControlLimits()
        limits.connectionsPerUser = 3
        limits.connectionsOfOthers = 5
        limits.connectionsOfRoot = 2
        let limiter = ConnectionLimiter(limits: limits)
        #expect((0..<3).allSatisfy { _ in limiter.admit(uid: 1000) == nil })
        #expect(limiter.admit(uid: 1000)?.contains("limit per user") == true)
        #expect(limiter.admit(uid: 1001) == nil)
        #expect(limiter.admit(uid: 1002) == nil)
        #expect(limiter.admit(uid: 1003)?.contains("other than root") == true)
        #expect(limiter.admit(uid: 0) == nil)
        #expect(limiter.admit(uid: 0) == nil)
        #expect(limiter.admit(uid: 0) != nil)
        limiter.release(uid: 1000)
        #expect(limiter.admit(uid: 1003) == nil)
        #expect(limiter.open[1000] == 2)
    }
}
