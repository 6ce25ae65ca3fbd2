@testable import Failures
import Testing

@Suite("The queue responder's hold")
struct QueueResponderTests {
    @Test("poll waits whole milliseconds until the next held packet is due, rounded up; nothing once it is due")
    func waitUntilDue() {
        let now = ContinuousClock.now
        #expect(QueueResponder.milliseconds(until: now.advanced(by: .milliseconds(2)), now: now) == 2)
        #expect(QueueResponder.milliseconds(until: now.advanced(by: .microseconds(1)), now: now) == 1)
        #expect(QueueResponder.milliseconds(until: now.advanced(by: .microseconds(2_001)), now: now) == 3)
        #expect(QueueResponder.milliseconds(until: now, now: now) == 0)
        #expect(QueueResponder.milliseconds(until: now.advanced(by: .seconds(-1)), now: now) == 0)
        #expect(QueueResponder.milliseconds(until: now.advanced(by: .seconds(Int64.max / 2)), now: now) == Int32.max)
    }
}
