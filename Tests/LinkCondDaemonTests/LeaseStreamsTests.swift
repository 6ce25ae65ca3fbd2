@testable import ControlHTTP
import NIOCore
import NIOPosix
import Testing

@Suite("A stopping daemon's wait for lease streams")
struct LeaseStreamsTests {
    let loop = MultiThreadedEventLoopGroup.singleton.any()

    @Test("With no stream open it returns at once; with one, when the last one closes", .timeLimit(.minutes(1)))
    func wokenByTheLastClose() async throws {
        let streams = LeaseStreams()
        await streams.waitUntilClosed(timeout: .hours(1), on: loop)
        streams.opened()
        streams.opened()
        let waiting = Task { await streams.waitUntilClosed(timeout: .hours(1), on: loop) }
        try await Task.sleep(for: .milliseconds(20))
        streams.closed()
        streams.closed()
        await waiting.value
    }

    @Test("A stream that stays open is waited for until the time limit, and no longer")
    func timeLimit() async {
        let streams = LeaseStreams()
        streams.opened()
        let started = ContinuousClock.now
        await streams.waitUntilClosed(timeout: .milliseconds(50), on: loop)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        await streams.waitUntilClosed(timeout: .zero, on: loop)
    }
}
