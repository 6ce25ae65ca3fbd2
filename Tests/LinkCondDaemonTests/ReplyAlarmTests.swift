@testable import LinkCondClient
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@Suite("The reply alarm: it rings for an answer that did not come, never for one that did")
struct ReplyAlarmTests {
    private func connection() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(AnswerCounter())
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/run/linkcond/control.sock")).wait()
        return channel
    }

    private func answer(on channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
    }

    @Test("An answer that came in time, its reader late: the alarm stands down and the connection stays open")
    func answeredBeforeTheAlarm() throws {
        let channel = try connection()
        let alarm = ReplyAlarm(closing: channel, after: .seconds(1), awaitingAnswer: 1)
        try answer(on: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!alarm.rang)
        #expect(channel.isActive)
    }

    @Test("No answer: the alarm rings at its time and closes the connection")
    func noAnswer() throws {
        let channel = try connection()
        let alarm = ReplyAlarm(closing: channel, after: .seconds(1), awaitingAnswer: 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        #expect(!alarm.rang)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(alarm.rang)
        #expect(!channel.isActive)
    }

    @Test("The second request's alarm waits for the second answer, not the first")
    func secondAnswer() throws {
        let channel = try connection()
        try answer(on: channel)
        let alarm = ReplyAlarm(closing: channel, after: .seconds(1), awaitingAnswer: 2)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(alarm.rang)
    }

    @Test("A lease's alarm waits for its first line, not a whole answer (a lease's answer lasts as long as the lease)")
    func leaseLine() throws {
        let channel = try connection()
        let alarm = ReplyAlarm(closing: channel, after: .seconds(1)) { $0.bodyParts > 0 }
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: #"{"event":"active"}"# + "\n")))
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!alarm.rang && channel.isActive)
    }
}
