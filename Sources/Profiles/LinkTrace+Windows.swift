/// A trace's capacity window by window, for a daemon that steps a direction's rate in place.
///
/// The windows of width `w` cover one period: `[0, w)`, `[w, 2w)`, … and, when `w` does not
/// divide the period, a shorter last window that ends at the period; then the trace, and the
/// list, start again. Each window holds exactly the opportunities the trace delivers in it, so a
/// period's windows carry all of them, and their capacities, weighted by length, average to
/// `meanCapacity`. Windows of one width straddling the loop instead would repeat only after the
/// least common multiple of width and period: for a period of 10 007 ms, 10 007 windows of 100 ms.
///
/// A width is at least a millisecond; a width at or beyond the period is one window, the mean.
extension LinkTrace {
    /// How many windows of `width` one period holds, the shorter last one included.
    public func windowCount(widthMilliseconds width: Int) -> Int {
        precondition(width > 0, "a window lasts at least a millisecond")
        let period = periodMilliseconds
        return period / width + (period % width == 0 ? 0 : 1)
    }

    /// The window `index` of a period; an index beyond the last wraps around, so that the `n`th
    /// window played since the trace began is `window(at: n, …)`. Binary searches: O(log n).
    public func window(at index: Int, widthMilliseconds width: Int) -> TraceWindow {
        precondition(index >= 0, "windows are counted from 0")
        let start = index % windowCount(widthMilliseconds: width) * width
        let end = Self.end(ofWindowFrom: start, width: width, period: periodMilliseconds)
        var opportunities = timestamps.lowerBound(of: UInt32(end)) - timestamps.lowerBound(of: UInt32(start))
        if start == 0 {
            opportunities += Self.opportunitiesAtPeriod(of: timestamps)
        }
        return Self.window(from: start, to: end, opportunities: opportunities)
    }

    /// The window in force `elapsedMilliseconds` after the trace began playing, looping: a
    /// daemon's timer can ask for the present window without counting the ones before, and
    /// the next change is due at `elapsed − elapsed % period + window.endMilliseconds`.
    public func window(containing elapsedMilliseconds: Int, widthMilliseconds width: Int) -> TraceWindow {
        precondition(elapsedMilliseconds >= 0, "a trace plays from 0")
        let position = elapsedMilliseconds % periodMilliseconds
        return window(at: position / width, widthMilliseconds: width)
    }

    /// Every window of one period, in order: one pass over the timestamps, O(n + windows).
    public func windows(widthMilliseconds width: Int) -> [TraceWindow] {
        var windows: [TraceWindow] = []
        windows.reserveCapacity(windowCount(widthMilliseconds: width))
        Self.forEachWindow(of: timestamps, widthMilliseconds: width) { windows.append($0) }
        return windows
    }

    /// The capacity of every window of one period, in order (see `windows(widthMilliseconds:)`
    /// for their lengths).
    public func windowCapacities(widthMilliseconds width: Int) -> [Bandwidth] {
        windows(widthMilliseconds: width).map(\.capacity)
    }

    /// The highest capacity of any window of `width`: `peakCapacity` for the standard width.
    public func peakCapacity(widthMilliseconds width: Int) -> Bandwidth {
        Self.peakCapacity(of: timestamps, widthMilliseconds: width)
    }

    static func peakCapacity(of timestamps: [UInt32], widthMilliseconds width: Int) -> Bandwidth {
        var peak = Bandwidth(bitsPerSecond: 0)
        forEachWindow(of: timestamps, widthMilliseconds: width) { peak = max(peak, $0.capacity) }
        return peak
    }

    /// Walks the windows of one period of `timestamps` (checked: sorted, the last above 0).
    static func forEachWindow(of timestamps: [UInt32], widthMilliseconds width: Int, _ body: (TraceWindow) -> Void) {
        precondition(width > 0, "a window lasts at least a millisecond")
        let period = Int(timestamps[timestamps.count - 1])
        var next = 0
        var carried = opportunitiesAtPeriod(of: timestamps)
        var start = 0
        while start < period {
            let end = end(ofWindowFrom: start, width: width, period: period)
            var opportunities = carried
            carried = 0
            while next < timestamps.count, Int(timestamps[next]) < end {
                opportunities += 1
                next += 1
            }
            body(window(from: start, to: end, opportunities: opportunities))
            start = end
        }
    }

    /// Opportunities written at the period itself: the loop plays them at the same moment as
    /// those at 0, so they belong to the first window.
    static func opportunitiesAtPeriod(of timestamps: [UInt32]) -> Int {
        timestamps.count - timestamps.lowerBound(of: timestamps[timestamps.count - 1])
    }

    /// `start + width`, or the period when that is beyond it (without overflowing for any width).
    private static func end(ofWindowFrom start: Int, width: Int, period: Int) -> Int {
        width >= period - start ? period : start + width
    }

    private static func window(from start: Int, to end: Int, opportunities: Int) -> TraceWindow {
        TraceWindow(
            startMilliseconds: start, lengthMilliseconds: end - start, opportunities: opportunities,
            capacity: Bandwidth(bitsPerSecond: bitsPerSecond(opportunities: opportunities, milliseconds: UInt64(end - start)))
        )
    }
}
