/// The order in which a scenario's steps play, with each random duration drawn: the same
/// scenario and seed always give the same sequence.
///
/// A pure value that the daemon advances one step at a time; it keeps no clock.
public struct ScenarioSchedule: Sendable, Equatable {
    /// One step as it plays: which step, in which round and repetition, for how long.
    public struct Play: Sendable, Equatable {
        /// Index into the scenario's steps.
        public var index: Int
        /// 1-based: the round of the whole list (always 1 unless the scenario repeats or loops).
        public var round: Int
        /// 1-based: the repetition of this step within the round.
        public var repetition: Int
        /// The duration drawn for this play; `nil` when the step has none.
        public var milliseconds: Int64?
    }

    public let scenario: Scenario
    public let seed: UInt64
    private var random: SplitMix64
    /// The play that comes next; `nil` once the scenario has played out.
    private var upcoming: (index: Int, round: Int, repetition: Int)?

    public init(_ scenario: Scenario, seed: UInt64) {
        self.scenario = scenario
        self.seed = seed
        self.random = SplitMix64(seed: seed)
        self.upcoming = scenario.steps.isEmpty ? nil : (0, 1, 1)
    }

    /// The next play, or `nil` when the scenario is over (the last step of a scenario that
    /// does not loop has played).
    public mutating func next() -> Play? {
        guard let (index, round, repetition) = upcoming else { return nil }
        let step = scenario.steps[index]
        var milliseconds: Int64?
        switch step.duration {
        case .fixed(let value): milliseconds = value
        case .range(let range): milliseconds = range.lowerBound + Int64(random.next() % UInt64(range.upperBound - range.lowerBound + 1))
        case nil: milliseconds = nil
        }
        if repetition < step.repeatCount {
            upcoming = (index, round, repetition + 1)
        } else if index + 1 < scenario.steps.count {
            upcoming = (index + 1, round, 1)
        } else if scenario.loops || round < scenario.repeatCount {
            upcoming = (0, round + 1, 1)
        } else {
            upcoming = nil
        }
        return Play(index: index, round: round, repetition: repetition, milliseconds: milliseconds)
    }

    /// Whether another play follows the last one `next` returned.
    public var hasNext: Bool { upcoming != nil }

    public static func == (lhs: ScenarioSchedule, rhs: ScenarioSchedule) -> Bool {
        lhs.scenario == rhs.scenario && lhs.seed == rhs.seed && lhs.random == rhs.random
            && lhs.upcoming?.index == rhs.upcoming?.index && lhs.upcoming?.round == rhs.upcoming?.round
            && lhs.upcoming?.repetition == rhs.upcoming?.repetition
    }
}

/// Steele, Lea and Flood's SplitMix64: tiny, fast and fully determined by its seed, which is
/// all a reproducible schedule needs (not cryptographic).
struct SplitMix64: Sendable, Equatable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
