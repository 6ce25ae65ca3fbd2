import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The code under test: loads a page, as an app's networking layer would.
enum PageLoad {
    /// The page these tests load: `$EXAMPLE_URL`, else example.com's.
    static let url = URL(string: ProcessInfo.processInfo.environment["EXAMPLE_URL"] ?? "http://example.com/")!

    /// Loads the page with a fresh session (no connection kept from an earlier test) and says
    /// how long it took.
    static func timed(timeout: TimeInterval = 30) async throws -> (body: Data, seconds: Double) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let start = ContinuousClock.now
        let (body, _) = try await session.data(from: url)
        let elapsed = ContinuousClock.now - start
        return (body, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
