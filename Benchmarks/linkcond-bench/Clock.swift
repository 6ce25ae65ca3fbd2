import Glibc

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `probe.py` stamps packets with, shared by every
/// network namespace, so switch times and packet times compare directly.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Percentiles of a sample, nearest-rank.
struct LatencySummary: Codable {
    var method: String
    var count: Int
    var p50Milliseconds: Double
    var p90Milliseconds: Double
    var p99Milliseconds: Double
    var meanMilliseconds: Double
    var minMilliseconds: Double
    var maxMilliseconds: Double
    var samplesMilliseconds: [Double]
    /// Switches the tool reported as failed (timed all the same).
    var failures = 0

    init(method: String, nanoseconds: [Int64]) {
        let sorted = nanoseconds.sorted().map { Double($0) / 1e6 }
        func rank(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(index, 0), sorted.count - 1)]
        }
        self.method = method
        self.count = sorted.count
        self.p50Milliseconds = rank(0.50)
        self.p90Milliseconds = rank(0.90)
        self.p99Milliseconds = rank(0.99)
        self.meanMilliseconds = sorted.isEmpty ? .nan : sorted.reduce(0, +) / Double(sorted.count)
        self.minMilliseconds = sorted.first ?? .nan
        self.maxMilliseconds = sorted.last ?? .nan
        self.samplesMilliseconds = nanoseconds.map { Double($0) / 1e6 }
    }

    var line: String {
        func f(_ value: Double) -> String { String(format: "%.3f", value) }
        return "\(method): \(count) switches, p50 \(f(p50Milliseconds)) ms, p90 \(f(p90Milliseconds)) ms, p99 \(f(p99Milliseconds)) ms, max \(f(maxMilliseconds)) ms"
    }
}
