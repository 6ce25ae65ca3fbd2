#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import NIOCore
import Profiles
import Shaping

// Scenarios: a condition's profile changing step by step, each change in place and recorded.

extension Conditioner {
    public func scenarios() -> ScenarioCatalog {
        scenarioCatalog
    }

    /// Starts playing `start` on `condition`, whose policy already has the first step in force.
    /// The schedule counts from `appliedAt`, when the kernel had the first step: writing the
    /// history after it must not lengthen the step.
    func beginScenario(_ start: ScenarioStart, on condition: inout Condition, appliedAt: NIODeadline) {
        let drives: ScenarioRun.Drives = condition.policy.lease.map { .lease($0.id) } ?? .baseline
        condition.scenario = ScenarioRun(
            entry: start.entry, schedule: start.schedule, play: start.play, drives: drives, stepSince: now,
            plannedStart: appliedAt, timeline: Timeline(generation: nextGeneration())
        )
        logger.notice("scenario '\(start.entry.scenario.name)' plays on \(condition.id) (seed \(start.schedule.seed))")
        if let run = condition.scenario {
            beginStepEvents(of: run.step, on: condition)
        }
        armStep(&condition)
    }

    /// `linkcond next`: the condition's scenario moves on now, whatever its step waits for.
    public func next(on id: ConditionID? = nil, by requester: Requester) throws(ConditionsRefusal) -> ConditionSnapshot {
        try checkRunning()
        let id = try resolved(id)
        guard var condition = registry[id], let run = condition.scenario else {
            throw ConditionsRefusal(NoScenarioError(condition: id.description, finished: false))
        }
        guard !run.finished else { throw ConditionsRefusal(NoScenarioError(condition: condition.id.description, finished: true)) }
        // A scenario in someone else's lease is theirs to move on (the test under `run`, as the same user).
        let force = condition.policy.lease?.isHeld(by: requester) ?? true
        try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        defer { settle(condition) }
        try advance(&condition, cause: "after linkcond next", requester: requester)
        return snapshot(of: condition)
    }

    /// Ends the current step and starts the next one, in place; the last step's end finishes
    /// the scenario and leaves its profile in force. A kernel refusal ends the scenario, with
    /// the step that was in force kept.
    package func advance(_ condition: inout Condition, cause: String, requester: Requester?, onSchedule: Bool = false) throws(ConditionsRefusal) {
        guard var run = condition.scenario, !run.finished else { return }
        run.timeline.restart(as: nextGeneration())
        let ended = run.step.displayName
        let plannedEnd = run.plannedEnd
        guard let play = run.schedule.next() else {
            run.finished = true
            condition.scenario = run
            logger.notice("scenario '\(run.scenario.name)' on \(condition.id) is over (\(cause)); '\(ended)' stays in force")
            record(
                condition, from: ended, to: condition.policy.effective?.profile.name ?? "off", reason: "scenario-end",
                requester: requester, detail: "'\(run.scenario.name)' played out: the last step ended \(cause); its profile stays"
            )
            return
        }
        let previous = condition.policy.effective
        do throws(ConditionsRefusal) {
            let wanted = try refusing { () throws(ScenarioStepError) in
                try run.drives.policy(condition.policy, playing: try run.entry.profile(of: play, in: catalog), scenario: run.scenario.name, now: now)
            }
            try refusing { () throws(ShapingError) in try converge(&condition, to: wanted, replacingForeign: false, keepingScenario: true) }
        } catch {
            logger.error("scenario '\(run.scenario.name)' on \(condition.id) stops at step \(run.play.index + 1): \(error)")
            endScenario(&condition)
            throw error
        }
        run.begin(play, at: now, plannedStart: onSchedule ? (plannedEnd ?? monotonicNow) : monotonicNow)
        condition.scenario = run
        let round = run.scenario.loops || run.scenario.repeatCount > 1 ? ", round \(play.round)" : ""
        record(
            condition, from: previous, reason: "scenario", requester: requester,
            detail: "'\(run.scenario.name)' step \(play.index + 1) of \(run.scenario.steps.count)\(round) (\(run.step.displayName)), \(cause)"
        )
        beginStepEvents(of: run.step, on: condition)
        armStep(&condition)
    }

    /// What a step does once, as it begins: a handover, then a reset of connections.
    private func beginStepEvents(of step: ScenarioStep, on condition: Condition) {
        if step.handsOver {
            handOverAsStepBegins(condition, step: step.displayName)
        }
        if step.resetsConnections {
            resetAsStepBegins(condition, step: step.displayName)
        }
    }

    /// Sets the current step's timer and, for a trigger, reads its counter now and starts polling.
    private func armStep(_ condition: inout Condition) {
        guard var run = condition.scenario else { return }
        let ticket = run.timeline.ticket(for: condition.id)
        if let end = run.plannedEnd {
            run.timeline.keep(schedule(at: end, ticket) { conditioner, ticket in conditioner.stepTimeUp(ticket) }, as: .nextChange)
        }
        if let trigger = run.step.trigger {
            run.triggerBase = condition.count(of: trigger)
            run.lastPoll = (monotonicNow, 0)
            run.timeline.keep(schedulePoll(ticket, in: ScenarioRun.fastestTriggerPoll * 4), as: .poll)
        }
        condition.scenario = run
    }

    private func schedulePoll(_ ticket: TimelineTicket, in delay: TimeAmount) -> Scheduled<Void> {
        schedule(in: delay, ticket) { conditioner, ticket in conditioner.pollTrigger(ticket) }
    }

    private func currentRun(_ ticket: TimelineTicket) -> (Condition, ScenarioRun)? {
        guard let condition = registry[ticket.condition], let run = condition.scenario,
              run.timeline.isCurrent(ticket), !run.finished, !stopping
        else { return nil }
        return (condition, run)
    }

    private func stepTimeUp(_ ticket: TimelineTicket) {
        guard let (current, run) = currentRun(ticket), let milliseconds = run.play.milliseconds else { return }
        var condition = current
        defer { settle(condition) }
        try? advance(&condition, cause: "after \(StepDuration.text(milliseconds))", requester: nil, onSchedule: true)
    }

    /// Reads the trigger's counter; the step ends once it reached its threshold, else the next
    /// read comes sooner the closer the traffic is to it.
    private func pollTrigger(_ ticket: TimelineTicket) {
        guard let (current, run) = currentRun(ticket), let trigger = run.step.trigger else { return }
        var condition = current
        defer { settle(condition) }
        var updated = run
        let now = monotonicNow
        guard let count = condition.count(of: trigger) else {
            updated.timeline.keep(schedulePoll(ticket, in: ScenarioRun.slowestTriggerPoll), as: .poll)
            condition.scenario = updated
            return
        }
        switch updated.read(count, of: trigger, at: now) {
        case .reached:
            condition.scenario = updated
            try? advance(&condition, cause: "after \(trigger) (\(updated.triggerProgress) \(trigger.unit.rawValue) carried)", requester: nil)
        case .readAgain(let delay):
            updated.timeline.keep(schedulePoll(ticket, in: delay), as: .poll)
            condition.scenario = updated
        }
    }

    /// Stops the condition's scenario, if one plays; what is in force stays.
    func endScenario(_ condition: inout Condition) {
        guard let run = condition.scenario else { return }
        run.timeline.cancel()
        condition.scenario = nil
        if !run.finished {
            logger.notice("scenario '\(run.scenario.name)' on \(condition.id) stopped at step \(run.play.index + 1) of \(run.scenario.steps.count)")
        }
    }

}
