import Foundation
import LinkCondTesting
import Testing

/// Swift Testing: the trait holds the profile for the test, and takes it off afterwards.
/// Serialized: one condition holds one profile at a time.
@Suite(.serialized)
struct SlowNetTests {
    @Test(.networkCondition("Slow Net"))
    func pageLoadTakesTwoRoundTrips() async throws {
        let (body, seconds) = try await PageLoad.timed()
        #expect(!body.isEmpty)
        // Slow Net delays each direction by 100 ms, and netem never sends early: the TCP
        // handshake and the request each take a whole 200 ms round trip.
        #expect(seconds >= 0.4, "the page loaded in \(seconds) s, faster than Slow Net allows")
    }

    @Test(.networkCondition("Slow Net"))
    func theProfileIsHeldForThisProcess() async throws {
        let status = try await ControlClient().status()
        #expect(status.profile?.name == "Slow Net")
        #expect(status.lease?.kind == .clientBound)
        #expect(status.lease?.holder.pid == ProcessInfo.processInfo.processIdentifier)
    }
}
