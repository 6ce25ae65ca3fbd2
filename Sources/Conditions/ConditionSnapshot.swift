#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Profiles
import Sandboxes
import Shaping

/// One condition as it is at one moment: what the conditioner answers a change or a question
/// with. A value any task may hold; the control API presents it as its own document.
public struct ConditionSnapshot: Sendable {
    public var id: ConditionID
    /// The daemon's default condition, the one a request without a condition changes.
    public var isDefault: Bool
    public var target: ShapingTarget
    /// The profile in force and the file it came from; `nil` when off.
    public var entry: ProfileEntry?
    /// When the current condition (or "off") began.
    public var since: Date
    /// Traffic that is never shaped (`tcp/22`).
    public var exemptions: [String]
    /// For a peer named by a host name: the addresses it resolved to when the condition was made.
    public var addresses: [[UInt8]]?
    public var lease: LeaseSnapshot?
    /// Asked for: linkcond's objects as the kernel has them now, with their counters.
    public var kernel: [KernelObjectReading]?
    /// For a `run --isolated` sandbox's condition: the sandbox, and what stands in its way.
    public var sandbox: SandboxAddressing?
    public var sandboxWarnings: [String]
    public var scenario: ScenarioProgress?
    public var trace: TraceProgress?

    /// The profile in force, `nil` when off.
    public var profile: Profile? { entry?.profile }
    public var isActive: Bool { entry != nil }
}

/// A condition's lease: who holds it, until when, and what comes back after it.
public struct LeaseSnapshot: Sendable, Equatable {
    public var profile: String
    public var holder: Holder
    /// Held while its client's connection stays open (`linkcond run`), else for a time.
    public var clientBound: Bool
    public var expires: Date?
    public var secondsLeft: Int?
    /// The profile that comes back after it, `off` for none.
    public var restores: String
}

/// A scenario playing on a condition: where it is, and what ends the current step.
public struct ScenarioProgress: Sendable, Equatable {
    public struct StepTime: Sendable, Equatable {
        /// 1-based, among the scenario's steps.
        public var step: Int
        public var name: String
        public var seconds: Double
    }

    public struct TriggerProgress: Sendable, Equatable {
        public var direction: String
        public var unit: String
        public var threshold: UInt64
        public var progress: UInt64
    }

    public var name: String
    public var file: String
    /// Random durations are drawn from it: the same seed plays them again.
    public var seed: UInt64
    /// 1-based index of the current step among `steps`.
    public var step: Int
    public var steps: Int
    public var stepName: String
    /// 1-based: which round of the whole list.
    public var round: Int
    public var stepSince: Date
    public var secondsInStep: Double
    /// What ends the step, in words.
    public var endsBy: String
    public var finished: Bool
    /// The time spent in each step that has played, the current one's so far included.
    public var timeInSteps: [StepTime]
    /// For a timed step: how long until it ends.
    public var secondsLeft: Double?
    /// For a step ended by traffic: the trigger and how far it is.
    public var trigger: TriggerProgress?
    /// The step after this one; `nil` for the last.
    public var next: String?
}

/// A trace-driven profile playing: how long since its traces began, and each direction's pace now.
public struct TraceProgress: Sendable, Equatable {
    /// Since the traces began, not wrapped at the period.
    public var elapsedMilliseconds: Int
    /// When they began on the machine's monotonic clock, in milliseconds since boot.
    public var monotonicStartMilliseconds: Double
    public var downlink: TracePace?
    public var uplink: TracePace?
}

/// How a lease ended without its client ending it, for the client still waiting on it.
public struct LeaseEnd: Sendable {
    public enum Reason: Sendable, Equatable {
        case released
        case expired
        case takenOver(by: Holder)
        case shutdown
        /// The network namespace of the condition's interface is gone.
        case namespaceEnded
    }

    public var reason: Reason
    /// The condition after the end.
    public var condition: ConditionSnapshot
}

/// What re-reading the profile directories found, and the default condition after it.
public struct ReloadOutcome: Sendable {
    public var profiles: Int
    public var problems: [ProfileError]
    /// Whether a condition in force had its profile's new values applied.
    public var reapplied: Bool
    public var condition: ConditionSnapshot
}
