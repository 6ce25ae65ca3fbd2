import Capture
import LinkCondVocabulary

/// A capture's limits, from `GET …/capture?for=30s&count=1000&snaplen=256`: it ends at the
/// first one reached, or when the client hangs up. `dropped=keep` also writes the packets the
/// condition dropped, marked.
package struct CaptureOptions: Sendable, Equatable {
    /// The longest a capture may run.
    static let longest = LeaseDuration(milliseconds: 24 * 3_600_000)
    static let mostPackets: UInt64 = 1_000_000_000

    var duration: LeaseDuration?
    var count: UInt64?
    var snapLength: Int32 = CaptureSession.Limits.defaultSnapLength
    var keepDropped = false

    init(duration: LeaseDuration? = nil, count: UInt64? = nil, snapLength: Int32 = CaptureSession.Limits.defaultSnapLength, keepDropped: Bool = false) {
        self.duration = duration
        self.count = count
        self.snapLength = snapLength
        self.keepDropped = keepDropped
    }

    init(query: [String: String]) throws(ControlError) {
        let known: Set = ["for", "count", "snaplen", "dropped"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw .badRequest("a capture takes for, count, snaplen and dropped; '\(APICall.printable(unknown))' is not one of them")
        }
        if let text = query["dropped"] {
            guard ["keep", "count"].contains(text) else {
                throw .badRequest("dropped must be keep (the packets the condition dropped written too, marked) or count (the default: counted in the statistics); not '\(APICall.printable(text))'")
            }
            keepDropped = text == "keep"
        }
        if let text = query["for"] {
            do {
                duration = try LeaseDuration(parsing: text)
            } catch {
                throw .badRequest("for: \(error)")
            }
            guard let duration, duration.milliseconds > 0, duration.milliseconds <= Self.longest.milliseconds else {
                throw .badRequest("for must be more than 0 and at most \(Self.longest)")
            }
        }
        if let text = query["count"] {
            guard let value = UInt64(text), (1...Self.mostPackets).contains(value) else {
                throw .badRequest("count must be a whole number from 1 to \(Self.mostPackets)")
            }
            count = value
        }
        if let text = query["snaplen"] {
            let range = CaptureSession.Limits.smallestSnapLength...CaptureSession.Limits.largestSnapLength
            guard let value = Int32(text), range.contains(value) else {
                throw .badRequest("snaplen must be a whole number of bytes from \(range.lowerBound) to \(range.upperBound)")
            }
            snapLength = value
        }
    }
}
