#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Netlink
import Profiles

/// What the daemon wants in force, written before every change so that a daemon killed at any
/// moment can be followed by one that finishes the job or undoes it.
///
/// Profiles are stored with their values in base units (bit/s, µs, loss in 10⁻¹⁰ %), never as
/// display text: a restarted daemon applies bit-identical kernel values, even if the profile
/// file changed meanwhile.
package struct PersistedState: Codable, Equatable {
    static let currentVersion = 2
    /// A state with a trace-driven direction: a daemon older than traces refuses it, where it
    /// would have read the direction as unlimited.
    static let traceVersion = 3

    struct StoredDirection: Codable, Equatable {
        var bandwidthBitsPerSecond: UInt64?
        var delayMicroseconds: UInt64
        var jitterMicroseconds: UInt64
        var lossScaledPercent: UInt64
        /// Absent when there are none (and in files written before there were any).
        var impairments: StoredImpairments?
        /// A trace-driven direction's trace file, read again by a restarted daemon, and the
        /// fingerprint of its timestamps then, which must still match.
        var traceFile: String?
        var traceFingerprint: UInt64?
    }

    /// `Impairments` in base units: percentages × 10¹⁰, bytes, packets, milliseconds.
    struct StoredImpairments: Codable, Equatable {
        var jitterDistribution: String
        var jitterCorrelation: UInt64
        var keepsOrder: Bool
        var lossCorrelation: UInt64
        var burstLossAverage: UInt64?
        var burstLossLength: Double?
        var duplicate: UInt64
        var duplicateCorrelation: UInt64
        var corrupt: UInt64
        var corruptCorrelation: UInt64
        var reorder: UInt64
        var reorderCorrelation: UInt64
        var queuePackets: UInt32?
        var queueBytes: UInt64?
        var queueMilliseconds: UInt32?
    }

    package struct StoredProfile: Codable, Equatable {
        var name: String
        var description: String
        var file: String
        var stem: String
        var downlink: StoredDirection
        var uplink: StoredDirection
        var dnsDelayMicroseconds: UInt64
        /// Absent in the files of daemons from before failures, and for a profile without one.
        var failure: String?
        /// Absent for a profile whose lookups do not fail.
        var dnsFailure: String?
        var dnsFailureNames: [String]?
    }

    package struct StoredLease: Codable, Equatable {
        package var profile: StoredProfile
        var holder: Holder
        var since: Date
        var expires: Date?
        var clientBound: Bool
    }

    var version = Self.currentVersion
    var interface: String
    /// `netns/NAME` or `pid/PID` for a condition in another network namespace.
    var namespace: String?
    /// Which namespace that was: a restarted daemon brings the condition back only into the
    /// same one, never into another that took its name.
    package var namespaceIdentity: NamespaceIdentity?
    /// The condition without any lease; `nil` is off.
    package var baseline: StoredProfile?
    var baselineSince: Date
    package var lease: StoredLease?
    /// A condition with a match (`eth0@PEER`): its slot in the target's tree, so that a
    /// restarted daemon finds its objects under the same handles.
    var slot: UInt16?
    /// A sandbox's number (`run --isolated`): a restarted daemon removes what it finds of it.
    package var sandbox: UInt16?
    /// A peer named by a host name: the addresses it resolved to when the condition was made,
    /// which a restarted daemon matches again without looking the name up.
    var hostAddresses: [String]?
}

extension PersistedState {
    /// Whether a stored direction follows a trace.
    var hasTrace: Bool {
        [baseline, lease?.profile].contains { profile in
            profile.map { $0.downlink.traceFile != nil || $0.uplink.traceFile != nil } ?? false
        }
    }
}

/// A stored value that cannot be a profile: out of range, or from a newer daemon.
package struct StoredProfileError: Error, CustomStringConvertible {
    var field: String
    var reason = "is out of range"
    package var description: String { "the state file's \(field) \(reason)" }
}

extension PersistedState.StoredDirection {
    init(_ conditions: LinkConditions) {
        self.init(
            bandwidthBitsPerSecond: conditions.bandwidth?.bitsPerSecond,
            delayMicroseconds: conditions.delay.microseconds,
            jitterMicroseconds: conditions.jitter.microseconds,
            lossScaledPercent: conditions.loss.scaledPercent,
            impairments: conditions.impairments.isNone ? nil : PersistedState.StoredImpairments(conditions.impairments),
            traceFile: conditions.trace?.file,
            traceFingerprint: conditions.trace?.fingerprint
        )
    }

    /// The values back, checked as strictly as a profile file's: a corrupted file is refused,
    /// never trusted.
    func conditions(field: String) throws(StoredProfileError) -> LinkConditions {
        if let bits = bandwidthBitsPerSecond, !(8...Bandwidth.maximum.bitsPerSecond).contains(bits) {
            throw StoredProfileError(field: "\(field).bandwidth")
        }
        guard delayMicroseconds <= Delay.maximum.microseconds else { throw StoredProfileError(field: "\(field).delay") }
        guard jitterMicroseconds <= delayMicroseconds else { throw StoredProfileError(field: "\(field).jitter") }
        guard lossScaledPercent <= LossRate.total.scaledPercent else { throw StoredProfileError(field: "\(field).loss") }
        return LinkConditions(
            bandwidth: bandwidthBitsPerSecond.map(Bandwidth.init(bitsPerSecond:)),
            trace: try trace(field: field),
            delay: Delay(microseconds: delayMicroseconds),
            jitter: Delay(microseconds: jitterMicroseconds),
            loss: LossRate(scaledPercent: lossScaledPercent),
            impairments: try impairments?.impairments(field: field) ?? Impairments()
        )
    }
}

extension PersistedState.StoredDirection {
    /// The trace file read again, if it still holds the trace the condition had: one that
    /// changed, or went, is refused rather than played as something else.
    func trace(field: String) throws(StoredProfileError) -> LinkTrace? {
        guard let traceFile else { return nil }
        guard bandwidthBitsPerSecond == nil, let trace = try? LinkTrace(contentsOfFile: traceFile), trace.fingerprint == traceFingerprint else {
            throw StoredProfileError(field: "\(field).trace", reason: "names a trace file that is gone, unreadable or changed since")
        }
        return trace
    }
}

extension PersistedState.StoredImpairments {
    init(_ impairments: Impairments) {
        self.init(
            jitterDistribution: impairments.jitterDistribution.rawValue,
            jitterCorrelation: impairments.jitterCorrelation.scaledPercent,
            keepsOrder: impairments.keepsOrder,
            lossCorrelation: impairments.lossCorrelation.scaledPercent,
            burstLossAverage: impairments.burstLoss?.average.scaledPercent,
            burstLossLength: impairments.burstLoss?.meanBurstPackets,
            duplicate: impairments.duplicate.scaledPercent,
            duplicateCorrelation: impairments.duplicateCorrelation.scaledPercent,
            corrupt: impairments.corrupt.scaledPercent,
            corruptCorrelation: impairments.corruptCorrelation.scaledPercent,
            reorder: impairments.reorder.scaledPercent,
            reorderCorrelation: impairments.reorderCorrelation.scaledPercent,
            queuePackets: impairments.queue.flatMap { if case .packets(let count) = $0 { count } else { nil } },
            queueBytes: impairments.queue.flatMap { if case .bytes(let count) = $0 { count } else { nil } },
            queueMilliseconds: impairments.queue.flatMap { if case .milliseconds(let count) = $0 { count } else { nil } }
        )
    }

    func impairments(field: String) throws(StoredProfileError) -> Impairments {
        func rate(_ value: UInt64, _ name: String) throws(StoredProfileError) -> LossRate {
            guard value <= LossRate.total.scaledPercent else { throw StoredProfileError(field: "\(field).\(name)") }
            return LossRate(scaledPercent: value)
        }
        guard let distribution = JitterDistribution(rawValue: jitterDistribution) else {
            throw StoredProfileError(field: "\(field).jitterDistribution")
        }
        var burstLoss: BurstLoss?
        if let average = burstLossAverage {
            guard let length = burstLossLength, (1...1000).contains(length) else { throw StoredProfileError(field: "\(field).burstLoss") }
            burstLoss = BurstLoss(average: try rate(average, "burstLoss"), meanBurstPackets: length)
        }
        let queues: [QueueLimit] = [queuePackets.map(QueueLimit.packets), queueBytes.map(QueueLimit.bytes), queueMilliseconds.map(QueueLimit.milliseconds)]
            .compactMap { $0 }
        guard queues.count <= 1 else { throw StoredProfileError(field: "\(field).queue") }
        return Impairments(
            jitterDistribution: distribution, jitterCorrelation: try rate(jitterCorrelation, "jitterCorrelation"), keepsOrder: keepsOrder,
            lossCorrelation: try rate(lossCorrelation, "lossCorrelation"), burstLoss: burstLoss,
            duplicate: try rate(duplicate, "duplicate"), duplicateCorrelation: try rate(duplicateCorrelation, "duplicateCorrelation"),
            corrupt: try rate(corrupt, "corrupt"), corruptCorrelation: try rate(corruptCorrelation, "corruptCorrelation"),
            reorder: try rate(reorder, "reorder"), reorderCorrelation: try rate(reorderCorrelation, "reorderCorrelation"),
            queue: queues.first
        )
    }
}

extension PersistedState.StoredProfile {
    init(_ entry: ProfileEntry) {
        let profile = entry.profile
        self.init(
            name: profile.name, description: profile.description, file: entry.file, stem: entry.stem,
            downlink: .init(profile.downlink), uplink: .init(profile.uplink),
            dnsDelayMicroseconds: profile.dnsDelay.microseconds,
            failure: profile.failure?.rawValue,
            dnsFailure: profile.dnsFailure?.kind.rawValue,
            dnsFailureNames: profile.dnsFailure.map(\.names)
        )
    }

    /// The entry back, or an error naming the field that is out of range.
    package func entry() throws(StoredProfileError) -> ProfileEntry {
        guard dnsDelayMicroseconds <= Delay.maximum.microseconds else { throw StoredProfileError(field: "dnsDelay") }
        var connectionFailure: ConnectionFailure?
        if let failure {
            guard let known = ConnectionFailure(rawValue: failure) else { throw StoredProfileError(field: "failure") }
            connectionFailure = known
        }
        var dns: DNSFailure?
        if let dnsFailure {
            guard let kind = DNSFailure.Kind(rawValue: dnsFailure) else { throw StoredProfileError(field: "dnsFailure") }
            let names = dnsFailureNames ?? []
            guard names.count <= DNSFailure.maximumNames, names.allSatisfy({ (try? DNSFailure.name(parsing: $0)) == $0 }) else {
                throw StoredProfileError(field: "dnsFailureNames")
            }
            dns = DNSFailure(kind: kind, names: names)
        }
        let profile = Profile(
            name: name, description: description,
            downlink: try downlink.conditions(field: "downlink"),
            uplink: try uplink.conditions(field: "uplink"),
            dnsDelay: Delay(microseconds: dnsDelayMicroseconds),
            failure: connectionFailure,
            dnsFailure: dns
        )
        return ProfileEntry(profile: profile, file: file, stem: stem)
    }
}

/// Reads and atomically replaces one condition's state file, `<id>.state.json` with the id
/// percent-encoded (`eth0.state.json`, `netns%2Fci-1%2Feth0.state.json`).
package struct StateStore: Sendable {
    static let suffix = ".state.json"
    let url: URL

    package init(directory: String, condition id: ConditionID) {
        self.url = URL(fileURLWithPath: directory).appendingPathComponent(PercentEncoding.encode(id.description) + Self.suffix)
    }

    /// The conditions a state directory has files for, by name; a file whose name cannot be a
    /// condition's is not linkcond's and is left alone.
    package static func storedConditions(in directory: String?) -> [ConditionID] {
        guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.sorted().compactMap { name in
            guard name.hasSuffix(suffix), let text = PercentEncoding.decode(name.dropLast(suffix.count)),
                  let id = try? ConditionID(parsing: text), !id.interface.isEmpty
            else { return nil }
            return id
        }
    }

    /// The state, or `nil` when there is none or it cannot be read (then the daemon starts
    /// from "off" and removes whatever tree it finds).
    package func load() -> PersistedState? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return Self.decode(data)
    }

    /// Decodes a state file's bytes: never traps, whatever they are.
    package static func decode(_ data: Data) -> PersistedState? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let state = try? decoder.decode(PersistedState.self, from: data),
              [PersistedState.currentVersion, PersistedState.traceVersion].contains(state.version)
        else { return nil }
        return state
    }

    static func encode(_ state: PersistedState) throws -> Data {
        var state = state
        state.version = state.hasTrace ? PersistedState.traceVersion : PersistedState.currentVersion
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(state)
    }

    /// Write-then-rename: a reader (or a daemon killed mid-write) sees the old file or the new one.
    func save(_ state: PersistedState) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.encode(state).write(to: url, options: .atomic)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
