#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import Profiles

/// A scenario playing on one condition: where it is, and the timeline that ends the current step.
///
/// It drives either the condition's baseline (`linkcond play`) or one lease
/// (`play --for`, `run --scenario`); any other change to the condition ends it.
struct ScenarioRun {
    enum Drives: Equatable {
        case baseline
        case lease(UInt64)
    }

    let entry: ScenarioEntry
    var schedule: ScenarioSchedule
    /// The step playing now.
    var play: ScenarioSchedule.Play
    var drives: Drives
    /// When the step began, for people; `plannedStart` is when it should have, for the clock.
    var stepSince: Date
    /// Seconds each step (by its index) was in force before the current step began.
    var secondsInEarlierSteps: [Int: Double] = [:]
    /// A timed step's end is reckoned from here, so that late starts do not add up over a
    /// long scenario: a step after a timed one is planned to start when that one was planned to end.
    var plannedStart: NIODeadline
    /// The trigger's counter (bytes or packets in its direction) when the step began, and the
    /// last reading since: the progress is their difference.
    var triggerBase: UInt64?
    var triggerProgress: UInt64 = 0
    var lastPoll: (at: NIODeadline, progress: UInt64)?
    /// The last step has played: its profile stays in force, nothing more happens.
    var finished = false
    /// The current step's timers: its end, and its trigger's readings.
    var timeline: Timeline

    var scenario: Scenario { entry.scenario }
    var step: ScenarioStep { scenario.steps[play.index] }

    /// When a timed step ends.
    var plannedEnd: NIODeadline? {
        play.milliseconds.map { plannedStart + .milliseconds($0) }
    }

    func secondsInStep(now: Date) -> Double {
        max(0, now.timeIntervalSince(stepSince))
    }

    /// Each step's time in force, the current step's so far included, in the list's order.
    func timeInSteps(now: Date) -> [(index: Int, seconds: Double)] {
        var seconds = secondsInEarlierSteps
        seconds[play.index, default: 0] += secondsInStep(now: now)
        return seconds.sorted { $0.key < $1.key }.map { (index: $0.key, seconds: $0.value) }
    }

    /// The current step ends now and `next` begins, its schedule counted from `plannedStart`;
    /// a trigger counts afresh.
    mutating func begin(_ next: ScenarioSchedule.Play, at now: Date, plannedStart: NIODeadline) {
        secondsInEarlierSteps[play.index, default: 0] += secondsInStep(now: now)
        play = next
        stepSince = now
        self.plannedStart = plannedStart
        triggerBase = nil
        triggerProgress = 0
        lastPoll = nil
    }

    /// The quickest a trigger is read again when the traffic is close to it, and the slowest
    /// when it is far or nothing moves. Reading costs one netlink dump of the condition's tree.
    static let fastestTriggerPoll = TimeAmount.milliseconds(5)
    static let slowestTriggerPoll = TimeAmount.milliseconds(100)

    enum TriggerReading: Equatable {
        case reached
        /// Not yet: read again after this long, sooner the closer the traffic is to the threshold.
        case readAgain(after: TimeAmount)
    }

    /// Takes `count`, the trigger's counter read at `now`, as the step's progress.
    mutating func read(_ count: UInt64, of trigger: StepTrigger, at now: NIODeadline) -> TriggerReading {
        // Objects made anew (the tree was rebuilt) count from zero again.
        let base = min(triggerBase ?? count, count)
        triggerBase = base
        let last = lastPoll
        triggerProgress = count - base
        lastPoll = (now, triggerProgress)
        if triggerProgress >= trigger.threshold { return .reached }
        var delay = Self.slowestTriggerPoll
        if let last, now > last.at, triggerProgress > last.progress {
            let perNanosecond = Double(triggerProgress - last.progress) / Double((now - last.at).nanoseconds)
            let untilThreshold = Double(trigger.threshold - triggerProgress) / perNanosecond
            delay = .nanoseconds(Int64(min(
                max(untilThreshold / 2, Double(Self.fastestTriggerPoll.nanoseconds)), Double(Self.slowestTriggerPoll.nanoseconds)
            )))
        }
        return .readAgain(after: delay)
    }

    /// What ends the current step, in words.
    var endsBy: String {
        if finished { return "nothing: the scenario is over" }
        var ways: [String] = []
        if let milliseconds = play.milliseconds { ways.append("after \(StepDuration.text(milliseconds))") }
        if let trigger = step.trigger { ways.append("after \(trigger)") }
        if ways.isEmpty {
            return schedule.hasNext ? "linkcond next" : "nothing: the last step lasts until the condition changes"
        }
        return ways.joined(separator: " or ") + (schedule.hasNext ? "" : " (the last step)")
    }
}
