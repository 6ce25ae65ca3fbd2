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

/// A scenario resolved and about to start: its schedule, first step and that step's profile.
struct ScenarioStart {
    var entry: ScenarioEntry
    var schedule: ScenarioSchedule
    var play: ScenarioSchedule.Play
    var profile: ProfileEntry
}

extension Conditioner {
    public func scenarios() -> ScenarioCatalog {
        scenarioCatalog
    }

    /// Resolves a scenario and draws its first step; nothing changes yet.
    func scenarioStart(named name: String) throws(ConditionsRefusal) -> ScenarioStart {
        let entry = try refusing { () throws(UnknownNameError<Scenario>) in try scenarioCatalog.entry(named: name) }
        var schedule = ScenarioSchedule(entry.scenario, seed: entry.scenario.seed ?? Self.freshSeed())
        guard let play = schedule.next() else { throw ConditionsRefusal(ScenarioStepError(scenario: entry.scenario.name, detail: "it has no steps")) }
        let profile = try refusing { () throws(ScenarioStepError) in try stepProfile(play, of: entry) }
        return ScenarioStart(entry: entry, schedule: schedule, play: play, profile: profile)
    }

    /// A seed that survives JSON (at most 2^53), so that status shows it exactly.
    private static func freshSeed() -> UInt64 {
        UInt64.random(in: 0...(1 << 53))
    }

    /// The profile a step plays: one of the daemon's by name, as the catalog has it now, or
    /// the step's own values (marked ad hoc, so reload leaves them alone).
    private func stepProfile(_ play: ScenarioSchedule.Play, of entry: ScenarioEntry) throws(ScenarioStepError) -> ProfileEntry {
        let step = entry.scenario.steps[play.index]
        switch step.profile {
        case .named(let name):
            do {
                return try catalog.entry(named: name)
            } catch {
                throw ScenarioStepError(scenario: entry.scenario.name, detail: "\(entry.file):\(step.line): step \(play.index + 1): \(error)")
            }
        case .inline(let profile):
            return ProfileEntry(profile: profile, file: entry.file, stem: "")
        }
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
            let profile = try refusing { () throws(ScenarioStepError) in try stepProfile(play, of: run.entry) }
            var wanted = condition.policy
            switch run.drives {
            case .baseline:
                wanted = wanted.wanting(baseline: profile, lease: wanted.lease, now: now)
            case .lease(let id):
                guard wanted.lease?.id == id else { throw ConditionsRefusal(ScenarioStepError(scenario: run.scenario.name, detail: "its lease ended")) }
                wanted.lease?.entry = profile
            }
            try refusing { () throws(ShapingError) in try converge(&condition, to: wanted, replacingForeign: false, keepingScenario: true) }
        } catch {
            logger.error("scenario '\(run.scenario.name)' on \(condition.id) stops at step \(run.play.index + 1): \(error)")
            endScenario(&condition)
            throw error
        }
        run.begin(play, at: now)
        run.plannedStart = onSchedule ? (plannedEnd ?? monotonicNow) : monotonicNow
        run.triggerBase = nil
        run.triggerProgress = 0
        run.lastPoll = nil
        condition.scenario = run
        let round = run.scenario.loops || run.scenario.repeatCount > 1 ? ", round \(play.round)" : ""
        record(
            condition, from: previous, reason: "scenario", requester: requester,
            detail: "'\(run.scenario.name)' step \(play.index + 1) of \(run.scenario.steps.count)\(round) (\(run.step.displayName)), \(cause)"
        )
        armStep(&condition)
    }

    /// Sets the current step's timer and, for a trigger, reads its counter now and starts polling.
    private func armStep(_ condition: inout Condition) {
        guard var run = condition.scenario else { return }
        let ticket = run.timeline.ticket(for: condition.id)
        if let end = run.plannedEnd {
            run.timeline.keep(schedule(at: end, ticket) { conditioner, ticket in conditioner.stepTimeUp(ticket) }, as: .nextChange)
        }
        if let trigger = run.step.trigger {
            run.triggerBase = triggerCount(trigger, on: condition)
            run.lastPoll = (monotonicNow, 0)
            run.timeline.keep(schedulePoll(ticket, in: ScenarioRun.fastestTriggerPoll * 4), as: .poll)
        }
        condition.scenario = run
    }

    private func schedulePoll(_ ticket: TimelineTicket, in delay: TimeAmount) -> Scheduled<Void> {
        schedule(in: delay, ticket) { conditioner, ticket in conditioner.pollTrigger(ticket) }
    }

    /// The trigger's counter on the condition now: bytes or packets its direction carried.
    private func triggerCount(_ trigger: StepTrigger, on condition: Condition) -> UInt64? {
        guard let counters = condition.convergence.counters(of: [condition.slot])[condition.slot] else { return nil }
        let direction = trigger.direction == .download ? counters.downlink : counters.uplink
        return trigger.unit == .bytes ? direction.bytes : direction.packets
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
        guard let count = triggerCount(trigger, on: condition) else {
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
