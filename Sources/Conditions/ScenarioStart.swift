#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Profiles

/// A scenario resolved and about to start: its schedule, first step and that step's profile.
struct ScenarioStart {
    var entry: ScenarioEntry
    var schedule: ScenarioSchedule
    var play: ScenarioSchedule.Play
    var profile: ProfileEntry

    /// Resolves the scenario `name` and draws its first step; nothing changes yet.
    init(named name: String, in scenarios: ScenarioCatalog, profiles: ProfileCatalog) throws(ConditionsRefusal) {
        entry = try refusing { () throws(UnknownNameError<Scenario>) in try scenarios.entry(named: name) }
        schedule = ScenarioSchedule(entry.scenario, seed: entry.scenario.seed ?? Self.freshSeed())
        guard let first = schedule.next() else {
            throw ConditionsRefusal(ScenarioStepError(scenario: entry.scenario.name, detail: "it has no steps"))
        }
        play = first
        let entry = entry
        profile = try refusing { () throws(ScenarioStepError) in try entry.profile(of: first, in: profiles) }
    }

    /// A seed that survives JSON (at most 2^53), so that status shows it exactly.
    private static func freshSeed() -> UInt64 {
        UInt64.random(in: 0...(1 << 53))
    }
}

extension ScenarioEntry {
    /// The profile a step plays: one of the daemon's by name, as `catalog` has it now, or the
    /// step's own values (marked ad hoc, so reload leaves them alone).
    func profile(of play: ScenarioSchedule.Play, in catalog: ProfileCatalog) throws(ScenarioStepError) -> ProfileEntry {
        let step = scenario.steps[play.index]
        switch step.profile {
        case .named(let name):
            do {
                return try catalog.entry(named: name)
            } catch {
                throw ScenarioStepError(scenario: scenario.name, detail: "\(file):\(step.line): step \(play.index + 1): \(error)")
            }
        case .inline(let profile):
            return ProfileEntry(profile: profile, file: file, stem: "")
        }
    }
}

extension ScenarioRun.Drives {
    /// `policy` with `profile`, the next step's, in force where the scenario plays: the baseline,
    /// or its lease while that lease lasts.
    func policy(_ policy: ConditionPolicy, playing profile: ProfileEntry, scenario: String, now: Date) throws(ScenarioStepError) -> ConditionPolicy {
        switch self {
        case .baseline:
            return policy.wanting(baseline: profile, lease: policy.lease, now: now)
        case .lease(let id):
            guard policy.lease?.id == id else { throw ScenarioStepError(scenario: scenario, detail: "its lease ended") }
            var wanted = policy
            wanted.lease?.entry = profile
            return wanted
        }
    }
}

extension Condition {
    /// A trigger's counter on the condition now: the bytes or packets its direction carried.
    func count(of trigger: StepTrigger) -> UInt64? {
        guard let counters = convergence.counters(of: [slot])[slot] else { return nil }
        let direction = trigger.direction == .download ? counters.downlink : counters.uplink
        return trigger.unit == .bytes ? direction.bytes : direction.packets
    }
}
