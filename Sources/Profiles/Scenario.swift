/// A network that changes: profiles played one after another, each held for a time, until a
/// trigger, or until the test says `linkcond next`.
///
/// A pure value, as read from a scenario file; `ScenarioSchedule` turns it into the sequence
/// of steps that plays.
public struct Scenario: Hashable, Sendable {
    /// Display name, e.g. `Slow Net, then Black Hole`; unique among scenarios, matched like a
    /// profile's name.
    public var name: String
    public var description: String
    public var steps: [ScenarioStep]
    /// How many times the whole list plays; ignored when `loops`.
    public var repeatCount: Int
    /// Plays the list again and again until stopped.
    public var loops: Bool
    /// Makes random durations reproducible; `nil`: a fresh seed each time it plays (and the
    /// status shows which one, so a run can be repeated).
    public var seed: UInt64?

    public init(name: String, description: String = "", steps: [ScenarioStep], repeatCount: Int = 1, loops: Bool = false, seed: UInt64? = nil) {
        self.name = name
        self.description = description
        self.steps = steps
        self.repeatCount = repeatCount
        self.loops = loops
        self.seed = seed
    }

    /// The profiles the steps name, each once, in order of first use.
    public var namedProfiles: [String] {
        var seen: [String] = []
        for step in steps {
            if case .named(let name) = step.profile, !seen.contains(name) { seen.append(name) }
        }
        return seen
    }
}

/// One step of a scenario: a profile, and what ends it.
///
/// With neither `duration` nor `trigger`, the step lasts until `linkcond next` (or, as the last
/// step of a scenario that does not loop, for as long as the scenario is in force). With both,
/// whichever comes first ends it.
public struct ScenarioStep: Hashable, Sendable {
    public enum ProfileReference: Hashable, Sendable {
        /// A profile of the daemon's, by name or file stem.
        case named(String)
        /// Values written in the step itself.
        case inline(Profile)
    }

    /// Shown in status and history; defaults to the profile's name.
    public var label: String?
    public var profile: ProfileReference
    public var duration: StepDuration?
    public var trigger: StepTrigger?
    /// The step plays this many times in a row (each time with a fresh random duration).
    public var repeatCount: Int
    /// As it begins, the step resets the condition's TCP connections (`reset: true`): a socket
    /// reclaimed, a network change.
    public var resetsConnections: Bool
    /// As it begins, the step hands a sandbox's flows over to a new path (`handover: true`), as
    /// from Wi-Fi to LTE: the far end sees them from a new address and port.
    public var handsOver: Bool
    /// The file's line the step starts on, for messages about it after parsing.
    public var line: Int

    public init(
        label: String? = nil, profile: ProfileReference, duration: StepDuration? = nil, trigger: StepTrigger? = nil,
        repeatCount: Int = 1, resetsConnections: Bool = false, handsOver: Bool = false, line: Int = 0
    ) {
        self.label = label
        self.profile = profile
        self.duration = duration
        self.trigger = trigger
        self.repeatCount = repeatCount
        self.resetsConnections = resetsConnections
        self.handsOver = handsOver
        self.line = line
    }

    /// What a person calls the step: its label, else its profile's name.
    public var displayName: String {
        if let label { return label }
        switch profile {
        case .named(let name): return name
        case .inline(let profile): return profile.name
        }
    }

    /// Ends only by `linkcond next`, or not at all.
    public var waitsForNext: Bool { duration == nil && trigger == nil }
}

/// How long a step lasts: a fixed time, or a time drawn uniformly from a range.
public enum StepDuration: Hashable, Sendable, CustomStringConvertible {
    case fixed(milliseconds: Int64)
    case range(milliseconds: ClosedRange<Int64>)

    /// The longest step: a day. Longer is a typo more often than a test.
    public static let maximumMilliseconds: Int64 = 86_400_000

    public var description: String {
        switch self {
        case .fixed(let milliseconds): return Self.text(milliseconds)
        case .range(let range): return "\(Self.text(range.lowerBound))..\(Self.text(range.upperBound))"
        }
    }

    /// `500ms`, `20s`, `1.5s`, `2m`.
    public static func text(_ milliseconds: Int64) -> String {
        if milliseconds % 60_000 == 0, milliseconds >= 60_000 { return "\(milliseconds / 60_000)m" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        if milliseconds > 1000 { return "\(Double(milliseconds) / 1000)s" }
        return "\(milliseconds)ms"
    }
}

/// Ends a step once enough traffic has passed in one direction since the step began, as the
/// kernel's counters of the condition count it.
public struct StepTrigger: Hashable, Sendable, CustomStringConvertible {
    public enum Direction: String, Hashable, Sendable {
        /// Traffic arriving at the interface: the condition's downlink.
        case download
        /// Traffic leaving it: the uplink.
        case upload
    }

    public enum Unit: String, Hashable, Sendable {
        case bytes
        case packets
    }

    public var direction: Direction
    public var unit: Unit
    public var threshold: UInt64

    public init(direction: Direction, unit: Unit, threshold: UInt64) {
        self.direction = direction
        self.unit = unit
        self.threshold = threshold
    }

    /// `20 KB of download`, `100 packets of upload`.
    public var description: String {
        "\(Self.amount(threshold, unit)) of \(direction.rawValue)"
    }

    /// `20 KB`, `1.5 MB`, `300 B`, `100 packets`.
    public static func amount(_ value: UInt64, _ unit: Unit) -> String {
        guard unit == .bytes else { return "\(value) packets" }
        for (suffix, size) in [("GB", 1e9), ("MB", 1e6), ("KB", 1e3)] where Double(value) >= size {
            let scaled = Double(value) / size
            return scaled == scaled.rounded() ? "\(Int(scaled)) \(suffix)" : "\((scaled * 10).rounded() / 10) \(suffix)"
        }
        return "\(value) B"
    }
}
