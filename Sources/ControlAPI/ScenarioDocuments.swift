/// `GET /v1/scenarios`: every scenario the daemon can play, and the files it skipped.
public struct ScenarioListResponse: Codable, Sendable, Equatable {
    public var scenarios: [ScenarioSummary]
    public var problems: [ProfileProblem]

    public init(scenarios: [ScenarioSummary], problems: [ProfileProblem]) {
        self.scenarios = scenarios
        self.problems = problems
    }
}

/// One scenario, as listings show it.
public struct ScenarioSummary: Codable, Sendable, Equatable {
    public var name: String
    public var description: String
    public var file: String
    /// The steps in order, each as `Slow Net until 20 KB of download`.
    public var steps: [String]
    /// `once`, `3 times`, or `loops`.
    public var repeats: String

    public init(name: String, description: String, file: String, steps: [String], repeats: String) {
        self.name = name
        self.description = description
        self.file = file
        self.steps = steps
        self.repeats = repeats
    }
}

/// A condition's scenario while it plays: where it is, and what ends the current step.
public struct ScenarioStatusDocument: Codable, Sendable, Equatable {
    public var name: String
    public var file: String
    /// Random durations are drawn from it: play the scenario with this seed to repeat them.
    public var seed: UInt64
    /// 1-based index of the current step among `steps`.
    public var step: Int
    public var steps: Int
    /// The step's label, or its profile's name.
    public var stepName: String
    /// 1-based: which round of the whole list (more than 1 when it repeats or loops).
    public var round: Int
    /// When the current step began, ISO 8601 UTC.
    public var stepSince: String
    public var secondsInStep: Double
    /// What ends the step, in words: `after 12s`, `after 20 KB of download`, `linkcond next`,
    /// or `nothing: the scenario is over` for the last step once the scenario has played out.
    public var endsBy: String
    /// For a timed step: how long until it ends.
    public var secondsLeft: Double?
    /// For a step ended by traffic: the trigger and how far it is.
    public var trigger: TriggerProgressDocument?
    /// The step that comes after this one; `nil` when this is the last.
    public var next: String?
    /// The last step has played; its profile stays in force until changed.
    public var finished: Bool
    /// The time spent in each step that has played since the scenario began, the current one's
    /// so far included, in the list's order: what `linkcond run --scenario` sums up at the end.
    /// (`nil` only from a daemon older than it.)
    public var timeInSteps: [StepTimeDocument]?

    public init(
        name: String, file: String, seed: UInt64, step: Int, steps: Int, stepName: String, round: Int, stepSince: String,
        secondsInStep: Double, endsBy: String, secondsLeft: Double? = nil, trigger: TriggerProgressDocument? = nil,
        next: String? = nil, finished: Bool = false, timeInSteps: [StepTimeDocument]? = nil
    ) {
        self.name = name
        self.file = file
        self.seed = seed
        self.step = step
        self.steps = steps
        self.stepName = stepName
        self.round = round
        self.stepSince = stepSince
        self.secondsInStep = secondsInStep
        self.endsBy = endsBy
        self.secondsLeft = secondsLeft
        self.trigger = trigger
        self.next = next
        self.finished = finished
        self.timeInSteps = timeInSteps
    }
}

/// How long one step of a scenario has been in force, over every round it played in.
public struct StepTimeDocument: Codable, Sendable, Equatable {
    /// 1-based position in the scenario's list, as `step` counts.
    public var step: Int
    /// The step's label, or its profile's name.
    public var name: String
    public var seconds: Double

    public init(step: Int, name: String, seconds: Double) {
        self.step = step
        self.name = name
        self.seconds = seconds
    }
}

/// How far a traffic trigger is: `progress` of `threshold` `unit` carried in `direction`
/// since the step began.
public struct TriggerProgressDocument: Codable, Sendable, Equatable {
    /// `download` or `upload`.
    public var direction: String
    /// `bytes` or `packets`.
    public var unit: String
    public var threshold: UInt64
    public var progress: UInt64

    public init(direction: String, unit: String, threshold: UInt64, progress: UInt64) {
        self.direction = direction
        self.unit = unit
        self.threshold = threshold
        self.progress = progress
    }
}
