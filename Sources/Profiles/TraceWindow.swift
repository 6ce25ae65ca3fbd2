/// A stretch of a trace's period and the capacity the trace delivers in it: what a daemon sets
/// a direction's rate to while the window lasts.
public struct TraceWindow: Hashable, Sendable {
    /// Where the window begins, in milliseconds from the start of the period.
    public var startMilliseconds: Int
    /// The width asked for; less for the last window of a period the width does not divide.
    public var lengthMilliseconds: Int
    /// The delivery opportunities in the window; the first window of a period also counts those
    /// written at the period itself, which the loop plays at its start.
    public var opportunities: Int
    /// The opportunities' 12 000 bits each over the window's length, to the nearest bit/s;
    /// 0 in an outage.
    public var capacity: Bandwidth

    public init(startMilliseconds: Int, lengthMilliseconds: Int, opportunities: Int, capacity: Bandwidth) {
        self.startMilliseconds = startMilliseconds
        self.lengthMilliseconds = lengthMilliseconds
        self.opportunities = opportunities
        self.capacity = capacity
    }

    /// Where the next window begins (the period, for the last one).
    public var endMilliseconds: Int { startMilliseconds + lengthMilliseconds }
}
