import ControlAPI

/// What `linkcond watch` shows, as text: pure, so that it is tested without a daemon or a
/// terminal. It remembers each direction's recent rates for the sparklines.
struct WatchView {
    /// Rates kept per direction: one per update, as many as a sparkline shows.
    static let kept = 30
    static let bars: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    private(set) var rates: [String: [Double]] = [:]

    /// Remembers the rates of `stats`; directions no longer there are forgotten.
    mutating func record(_ stats: StatsResponse) {
        var next: [String: [Double]] = [:]
        for condition in stats.conditions {
            for (name, direction) in [("down", condition.downlink), ("up", condition.uplink)] {
                guard let direction else { continue }
                let key = name + " " + condition.id
                var series = rates[key] ?? []
                series.append(direction.bitsPerSecond ?? 0)
                next[key] = Array(series.suffix(Self.kept))
            }
        }
        rates = next
    }

    /// The whole screen: each condition with a profile, its lease, and per direction the
    /// sparkline of its rate, the rate now, drops and the queue.
    func frame(_ conditions: ConditionListResponse, _ stats: StatsResponse) -> String {
        var lines = ["linkcond watch  \(stats.at)  (Ctrl-C quits)", ""]
        let active = conditions.conditions.filter(\.active)
        if active.isEmpty {
            lines.append("no condition in force: sudo linkcond activate \"Slow Net\"")
        }
        for condition in active {
            var heading = "\(condition.id): \(condition.profile?.name ?? "off")"
            if let lease = condition.lease {
                heading += lease.secondsLeft.map { ", lease \($0)s left" } ?? ", lease while its client runs"
            }
            lines.append(heading)
            let counters = stats.conditions.first { $0.id == condition.id }
            for (name, direction) in [("down", counters?.downlink), ("up", counters?.uplink)] {
                guard let direction else { continue }
                let spark = Self.sparkline(rates[name + " " + condition.id] ?? [])
                lines.append("  \(name.padding(5))\(spark.padding(Self.kept + 1))\(Self.rate(direction.bitsPerSecond).padding(13))"
                    + "\(direction.droppedPackets) dropped\(Self.dropDetail(direction)), "
                    + "\(direction.queuedPackets) queued (\(direction.queuedBytes) bytes)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// One line per active condition, for a pipe or a file: no cursor movement.
    func plainLines(_ conditions: ConditionListResponse, _ stats: StatsResponse) -> [String] {
        let active = conditions.conditions.filter(\.active)
        guard !active.isEmpty else { return ["\(stats.at) no condition in force"] }
        return active.map { condition in
            let counters = stats.conditions.first { $0.id == condition.id }
            let directions = [("down", counters?.downlink), ("up", counters?.uplink)].compactMap { name, direction in
                direction.map {
                    "\(name) \(Self.rate($0.bitsPerSecond)) \($0.bytes) bytes \($0.droppedPackets) dropped \($0.droppedByLoss) loss \($0.droppedByQueue) queue-full \($0.queuedPackets) queued"
                }
            }
            var line = "\(stats.at) \(condition.id) \(condition.profile?.name ?? "off")"
            if let left = condition.lease?.secondsLeft { line += " lease \(left)s" }
            return ([line] + directions).joined(separator: "; ")
        }
    }

    /// The bars of `values`, scaled to the largest; flat at the bottom when all are zero.
    static func sparkline(_ values: [Double]) -> String {
        let top = values.max() ?? 0
        return String(values.map { value in
            guard top > 0 else { return bars[0] }
            return bars[min(bars.count - 1, Int((value / top * Double(bars.count - 1)).rounded()))]
        })
    }

    /// `850 bit/s`, `31.2 kbit/s`, `1.5 Mbit/s`; `-` before a rate is known.
    static func rate(_ bitsPerSecond: Double?) -> String {
        guard let bitsPerSecond else { return "-" }
        let (scale, unit): (Double, String) = switch bitsPerSecond {
        case ..<1_000: (1, "bit/s")
        case ..<1_000_000: (1_000, "kbit/s")
        case ..<1_000_000_000: (1_000_000, "Mbit/s")
        default: (1_000_000_000, "Gbit/s")
        }
        let tenths = Int((bitsPerSecond / scale * 10).rounded())
        let number = scale == 1 || tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        return number + " " + unit
    }

    /// ` (7/s; 5 loss, 2 queue full)`: the drops' rate and reasons, when there are any.
    private static func dropDetail(_ direction: DirectionStatsDocument) -> String {
        var parts: [String] = []
        if let rate = direction.droppedPerSecond, rate > 0 { parts.append("\(Int(rate.rounded()))/s") }
        if direction.droppedPackets > 0 { parts.append("\(direction.droppedByLoss) loss, \(direction.droppedByQueue) queue full") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: "; ") + ")"
    }
}
