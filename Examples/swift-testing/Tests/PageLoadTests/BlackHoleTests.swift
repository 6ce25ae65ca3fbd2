import Foundation
import LinkCondXCTest
import XCTest

/// XCTest: `withNetworkCondition` holds the profile while its closure runs.
final class BlackHoleTests: XCTestCase {
    func testPageLoadTimesOutInABlackHole() async throws {
        try await withNetworkCondition("Black Hole") {
            do {
                let (_, seconds) = try await PageLoad.timed(timeout: 2)
                XCTFail("the page loaded in \(seconds) s through Black Hole")
            } catch let error as URLError {
                XCTAssertEqual(error.code, .timedOut)
            }
        }
    }
}
