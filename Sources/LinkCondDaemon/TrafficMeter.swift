import ControlAPI
import Netlink
import Synchronization

/// One condition's counters, as read from the kernel at one moment.
struct ConditionCounters: Sendable, Equatable {
    var id: String
    var profile: String?
    var uplink: TrafficStatistics
    var downlink: TrafficStatistics
}

/// Turns successive readings of the kernel's counters into rates. It keeps no timer and reads
/// nothing by itself, so that an idle daemon costs nothing: a rate needs two requests, and
/// comes from the last reading of the same direction if that was at most `window` earlier.
final class TrafficMeter: Sendable {
    static let window = Duration.seconds(60)

    private struct Previous {
        var at: ContinuousClock.Instant
        var statistics: TrafficStatistics
    }

    private let previous = Mutex<[String: Previous]>([:])

    /// The documents of `readings`, taken at `now`, with rates since the previous ones. Every
    /// condition not read now is forgotten: what is kept is bounded by the conditions held.
    func documents(_ readings: [ConditionCounters], at now: ContinuousClock.Instant) -> [ConditionStatsDocument] {
        previous.withLock { previous in
            var next: [String: Previous] = [:]
            func document(_ statistics: TrafficStatistics, _ key: String) -> DirectionStatsDocument {
                next[key] = Previous(at: now, statistics: statistics)
                return Self.document(statistics, since: previous[key], now: now)
            }
            let documents = readings.map { reading in
                ConditionStatsDocument(
                    id: reading.id, profile: reading.profile,
                    uplink: document(reading.uplink, "up " + reading.id),
                    downlink: document(reading.downlink, "down " + reading.id)
                )
            }
            previous = next
            return documents
        }
    }

    private static func document(_ current: TrafficStatistics, since earlier: Previous?, now: ContinuousClock.Instant) -> DirectionStatsDocument {
        var document = DirectionStatsDocument(
            bytes: current.bytes, packets: current.packets, droppedPackets: current.drops,
            queuedPackets: current.queuedPackets, queuedBytes: current.queuedBytes
        )
        // Counters that went down belong to objects made anew (off and on again): no rate.
        guard let earlier, now - earlier.at <= window, now > earlier.at,
              current.bytes >= earlier.statistics.bytes, current.packets >= earlier.statistics.packets,
              current.drops >= earlier.statistics.drops
        else { return document }
        let (whole, fraction) = (now - earlier.at).components
        let seconds = Double(whole) + Double(fraction) / 1e18
        document.bitsPerSecond = Double(current.bytes - earlier.statistics.bytes) * 8 / seconds
        document.packetsPerSecond = Double(current.packets - earlier.statistics.packets) / seconds
        document.droppedPerSecond = Double(current.drops - earlier.statistics.drops) / seconds
        return document
    }
}
