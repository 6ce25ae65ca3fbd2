import Conditions
import ControlAPI
import Netlink
import Shaping
import Synchronization

/// Turns successive readings of the kernel's counters into rates. It keeps no timer and reads
/// nothing by itself, so that an idle daemon costs nothing: a rate needs two requests, and
/// comes from the last reading of the same direction if that was at most `window` earlier.
package final class TrafficMeter: Sendable {
    static let window = Duration.seconds(60)

    private struct Previous {
        var at: ContinuousClock.Instant
        var counters: DirectionCounters
    }

    private let previous = Mutex<[String: Previous]>([:])

    /// The documents of `readings`, taken at `now`, with rates since the previous ones. Every
    /// condition not read now is forgotten: what is kept is bounded by the conditions held.
    func documents(_ readings: [ConditionCounters], at now: ContinuousClock.Instant) -> [ConditionStatsDocument] {
        previous.withLock { previous in
            var next: [String: Previous] = [:]
            func document(_ counters: DirectionCounters, _ key: String) -> DirectionStatsDocument {
                next[key] = Previous(at: now, counters: counters)
                return Self.document(counters, since: previous[key], now: now)
            }
            let documents = readings.map { reading in
                ConditionStatsDocument(
                    id: reading.id, profile: reading.profile,
                    uplink: document(reading.uplink, "up " + reading.id),
                    downlink: document(reading.downlink, "down " + reading.id),
                    failure: reading.failure, failedPackets: reading.failedPackets
                )
            }
            previous = next
            return documents
        }
    }

    private static func document(_ current: DirectionCounters, since earlier: Previous?, now: ContinuousClock.Instant) -> DirectionStatsDocument {
        var document = DirectionStatsDocument(
            bytes: current.bytes, packets: current.packets, droppedByLoss: current.lossDrops, droppedByQueue: current.queueDrops,
            queuedPackets: current.queuedPackets, queuedBytes: current.queuedBytes
        )
        // Counters that went down belong to objects made anew (off and on again): no rate.
        guard let earlier, now - earlier.at <= window, now > earlier.at,
              current.bytes >= earlier.counters.bytes, current.packets >= earlier.counters.packets,
              current.drops >= earlier.counters.drops
        else { return document }
        let (whole, fraction) = (now - earlier.at).components
        let seconds = Double(whole) + Double(fraction) / 1e18
        document.bitsPerSecond = Double(current.bytes - earlier.counters.bytes) * 8 / seconds
        document.packetsPerSecond = Double(current.packets - earlier.counters.packets) / seconds
        document.droppedPerSecond = Double(current.drops - earlier.counters.drops) / seconds
        return document
    }
}
