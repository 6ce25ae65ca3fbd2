import Conditions
import Netlink
import Shaping

/// `GET /metrics`: the conditions and their counters in Prometheus's text format (version
/// 0.0.4), written directly: a metrics library would cost the daemon more memory than the
/// handful of series it has.
package enum MetricsText {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// One condition as the metrics name it.
    struct Condition {
        var id: String
        var profile: String?
        var leaseSecondsLeft: Int?
        var counters: ConditionCounters?
        /// The failure of the profile in force, if it has one.
        var failure: String? = nil
    }

    static func render(_ conditions: [Condition]) -> String {
        var text = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples {
                text += "\(name){\(sample.labels)} \(sample.value)\n"
            }
        }
        func perDirection(_ values: [(label: String, value: KeyPath<DirectionCounters, UInt64>)]) -> [(labels: String, value: String)] {
            conditions.flatMap { condition -> [(labels: String, value: String)] in
                guard let counters = condition.counters else { return [] }
                return [("down", counters.downlink), ("up", counters.uplink)].flatMap { direction, statistics in
                    values.map { label, value in
                        ("condition=\"\(escaped(condition.id))\",direction=\"\(direction)\"\(label)", String(statistics[keyPath: value]))
                    }
                }
            }
        }
        func perDirection(_ value: KeyPath<DirectionCounters, UInt64>) -> [(labels: String, value: String)] {
            perDirection([("", value)])
        }
        family("linkcond_condition_active", "gauge", "1 while the condition has a profile in force, with the profile's name.",
               conditions.map { ("condition=\"\(escaped($0.id))\",profile=\"\(escaped($0.profile ?? ""))\"", $0.profile == nil ? "0" : "1") })
        family("linkcond_lease_seconds_left", "gauge", "Seconds until the condition's timed lease ends.",
               conditions.compactMap { condition in condition.leaseSecondsLeft.map { ("condition=\"\(escaped(condition.id))\"", String($0)) } })
        family("linkcond_bytes_total", "counter", "Bytes carried through the condition's profile, since its objects were made.", perDirection(\.bytes))
        family("linkcond_packets_total", "counter", "Packets carried through the condition's profile.", perDirection(\.packets))
        family("linkcond_dropped_packets_total", "counter", "Packets dropped by the profile's loss (reason=\"loss\") or because its queue was full (reason=\"queue\").",
               perDirection([(",reason=\"loss\"", \.lossDrops), (",reason=\"queue\"", \.queueDrops)]))
        family("linkcond_queued_packets", "gauge", "Packets waiting in the profile's queue now.", perDirection(\.queuedPackets))
        family("linkcond_queued_bytes", "gauge", "Bytes waiting in the profile's queue now.", perDirection(\.queuedBytes))
        family("linkcond_condition_failure", "gauge", "1 while the condition's profile fails connections, with the failures (offline, refuse, link-down, dns-nxdomain, dns-servfail, dns-timeout).",
               conditions.compactMap { condition in condition.failure.map { ("condition=\"\(escaped(condition.id))\",failure=\"\(escaped($0))\"", "1") } })
        family("linkcond_failed_packets_total", "counter", "Packets the condition's failure refused (answered with an error) or dropped, since it came into force.",
               conditions.compactMap { condition in
                   guard let failure = condition.failure, let packets = condition.counters?.failedPackets else { return nil }
                   return ("condition=\"\(escaped(condition.id))\",failure=\"\(escaped(failure))\"", String(packets))
               })
        return text
    }

    /// A label value as the format wants it: backslash, double quote and newline escaped.
    static func escaped(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}
