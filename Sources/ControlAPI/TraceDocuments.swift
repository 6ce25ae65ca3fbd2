/// A trace-driven direction's trace, in a profile document.
public struct TraceDocument: Codable, Sendable, Equatable {
    /// The trace file's stem: `steps` for `traces/steps.trace`.
    public var name: String
    /// Where the daemon read it.
    public var file: String
    /// The average rate over one period of the trace, `6Mbit`.
    public var mean: String
    /// The highest rate of a 100 ms window.
    public var peak: String
    /// When the trace starts again, in milliseconds.
    public var periodMilliseconds: Int

    public init(name: String, file: String, mean: String, peak: String, periodMilliseconds: Int) {
        self.name = name
        self.file = file
        self.mean = mean
        self.peak = peak
        self.periodMilliseconds = periodMilliseconds
    }
}

/// Where a condition's traces are while they play: how long since they began, and each
/// trace-driven direction's rate now.
public struct TracePlaybackDocument: Codable, Sendable, Equatable {
    /// Milliseconds since the traces began playing, not wrapped at the period: both directions
    /// and every loop count from the same moment.
    public var elapsedMilliseconds: Int
    /// When the traces began on the machine's monotonic clock (`CLOCK_MONOTONIC`, milliseconds
    /// since boot, to the microsecond): to line the trace up with packets stamped on the same
    /// machine, as the test suite does.
    public var monotonicStartMilliseconds: Double
    public var downlink: TraceRateDocument?
    public var uplink: TraceRateDocument?

    public init(elapsedMilliseconds: Int, monotonicStartMilliseconds: Double, downlink: TraceRateDocument?, uplink: TraceRateDocument?) {
        self.elapsedMilliseconds = elapsedMilliseconds
        self.monotonicStartMilliseconds = monotonicStartMilliseconds
        self.downlink = downlink
        self.uplink = uplink
    }
}

/// One direction's place in its trace.
public struct TraceRateDocument: Codable, Sendable, Equatable {
    /// What the trace delivers now (`0bit` in an outage).
    public var capacity: String
    /// What the link is given: the capacity, or in an outage one packet over its length.
    public var rate: String
    /// How far into the trace (as `elapsedMilliseconds`) the rate changes next; absent when it never does.
    public var changesAtMilliseconds: Int?

    public init(capacity: String, rate: String, changesAtMilliseconds: Int?) {
        self.capacity = capacity
        self.rate = rate
        self.changesAtMilliseconds = changesAtMilliseconds
    }
}
