import ControlAPI
import LinkCondClient
import Synchronization

/// The daemon's counters, read at most once a second for every browser at once: each page asks
/// every second, and the daemon's rates are over the time since the previous read by anyone.
final class StatsCache: Sendable {
    private let last = Mutex<(at: ContinuousClock.Instant, stats: StatsResponse)?>(nil)
    static let freshFor = Duration.milliseconds(900)

    func read(_ fetch: () async throws(ControlClientError) -> StatsResponse) async throws(ControlClientError) -> StatsResponse {
        let now = ContinuousClock.now
        if let cached = last.withLock({ $0 }), now - cached.at < Self.freshFor {
            return cached.stats
        }
        let stats = try await fetch()
        last.withLock { $0 = (now, stats) }
        return stats
    }
}
