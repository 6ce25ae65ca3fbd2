/// The rate a daemon gives a trace-driven direction at a moment of the trace, and how long it
/// holds.
///
/// The rate follows the trace's `standardWindowMilliseconds` windows: each window's capacity is
/// the rate while it lasts. Neighbouring windows of the same capacity are one stretch, so that
/// the kernel is changed only when the rate does.
///
/// An outage (windows without a delivery opportunity) cannot be a rate of 0: htb has none, and a
/// packet sent at a rate near 0 leaves the class owing its transmission time at that rate (up to
/// a minute, htb's cap) once the link is back. An outage's rate is therefore one packet over the
/// outage's remaining length, paced again at every window of it: the first packet through owes
/// until the outage's end, and one that slips through as it ends owes at most one window.
public struct TracePace: Hashable, Sendable {
    /// What the trace delivers in this stretch; 0 in an outage.
    public var capacity: Bandwidth
    /// What the link is given: the capacity, or in an outage `LinkTrace.outageRate(lasting:)`.
    public var rate: Bandwidth
    /// How far into the trace (looping, counted from when it began playing) the stretch ends
    /// and the rate may change; `nil` when it never does. In an outage, the window's end.
    public var endsAtMilliseconds: Int?

    public init(capacity: Bandwidth, rate: Bandwidth, endsAtMilliseconds: Int?) {
        self.capacity = capacity
        self.rate = rate
        self.endsAtMilliseconds = endsAtMilliseconds
    }

    public var isOutage: Bool { capacity.bitsPerSecond == 0 }
}

extension LinkTrace {
    /// The longest stretch one pace looks ahead: a trace whose windows stay alike longer is
    /// paced again after it, at no cost, since the rate is unchanged.
    public static let longestStretchMilliseconds = 60_000
    /// htb lets a class owe at most a minute of transmission time: an outage is sized as at most
    /// that long, so that its one packet's debt is paid by the time the link comes back.
    static let longestOutageMilliseconds = 60_000
    /// What htb charges for a full-size frame on an Ethernet link: a 1500-byte packet and its
    /// 14-byte header. Sized for a 1500-byte opportunity instead, an outage's one frame owed 0.9%
    /// past its end: the link came back 28 ms late after 3 s (measured in the kernel suite).
    static let fullFrameBytes: UInt64 = 1_514

    /// The pace `elapsedMilliseconds` after the trace began playing.
    public func pace(at elapsedMilliseconds: Int) -> TracePace {
        precondition(elapsedMilliseconds >= 0, "a trace plays from 0")
        let width = Self.standardWindowMilliseconds
        let windowsPerPeriod = windowCount(widthMilliseconds: width)
        let periodStart = elapsedMilliseconds - elapsedMilliseconds % periodMilliseconds
        let first = (elapsedMilliseconds - periodStart) / width
        let capacity = window(at: first, widthMilliseconds: width).capacity
        // Walk the windows alike from the current one on, across the loop if need be.
        var end = periodStart + window(at: first, widthMilliseconds: width).endMilliseconds
        var walked = 1
        while walked < windowsPerPeriod, end - elapsedMilliseconds < Self.longestStretchMilliseconds {
            let next = window(at: first + walked, widthMilliseconds: width)
            guard next.capacity == capacity else { break }
            end += next.lengthMilliseconds
            walked += 1
        }
        let constant = walked == windowsPerPeriod
        guard capacity.bitsPerSecond == 0 else {
            return TracePace(capacity: capacity, rate: capacity, endsAtMilliseconds: constant ? nil : end)
        }
        let windowEnd = periodStart + window(at: first, widthMilliseconds: width).endMilliseconds
        return TracePace(capacity: capacity, rate: Self.outageRate(lasting: end - elapsedMilliseconds), endsAtMilliseconds: min(end, windowEnd))
    }

    /// One full-size frame over an outage of `milliseconds` (at most `longestOutageMilliseconds`),
    /// in whole bytes a second as the kernel takes it, rounded down so that no second frame gets
    /// through before the outage's end: 1514 bytes in 3 s is 504 bytes (4 032 bits) a second,
    /// which the frame owes for 3.004 s.
    public static func outageRate(lasting milliseconds: Int) -> Bandwidth {
        let counted = UInt64(min(max(milliseconds, 1), longestOutageMilliseconds))
        return Bandwidth(bitsPerSecond: max(fullFrameBytes * 1_000 / counted, 1) * 8)
    }
}

extension Profile {
    /// The profile as the kernel gets it `elapsedMilliseconds` after its traces began: each
    /// trace-driven direction with its pace's rate as its bandwidth (the trace stays, for the
    /// queue's size); and the soonest time either direction's rate changes, `nil` for never.
    /// A profile without a trace is itself, for good.
    public func paced(at elapsedMilliseconds: Int) -> (profile: Profile, changesAtMilliseconds: Int?) {
        var paced = self
        var changes: Int?
        func pace(_ conditions: inout LinkConditions) {
            guard let trace = conditions.trace else { return }
            let pace = trace.pace(at: elapsedMilliseconds)
            conditions.bandwidth = pace.rate
            if let end = pace.endsAtMilliseconds {
                changes = min(changes ?? end, end)
            }
        }
        pace(&paced.downlink)
        pace(&paced.uplink)
        return (paced, changes)
    }

    /// Whether an outage of a direction ends at `milliseconds` into the traces.
    public func endsOutage(at milliseconds: Int) -> Bool {
        guard milliseconds > 0 else { return false }
        return [downlink.trace, uplink.trace].contains { trace in
            guard let trace else { return false }
            return trace.pace(at: milliseconds - 1).isOutage && !trace.pace(at: milliseconds).isOutage
        }
    }
}
