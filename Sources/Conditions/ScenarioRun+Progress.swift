#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import Profiles

extension ScenarioRun {
    /// Where the scenario is, for status: `now` on the wall clock, `deadline` on the timers'.
    func progress(now: Date, at deadline: NIODeadline) -> ScenarioProgress {
        let toTheMillisecond = { (seconds: Double) in (seconds * 1000).rounded() / 1000 }
        var progress = ScenarioProgress(
            name: scenario.name, file: entry.file, seed: schedule.seed, step: play.index + 1,
            steps: scenario.steps.count, stepName: step.displayName, round: play.round,
            stepSince: stepSince, secondsInStep: toTheMillisecond(secondsInStep(now: now)),
            endsBy: endsBy, finished: finished,
            timeInSteps: timeInSteps(now: now).map {
                ScenarioProgress.StepTime(step: $0.index + 1, name: scenario.steps[$0.index].displayName, seconds: toTheMillisecond($0.seconds))
            }
        )
        guard !finished else { return progress }
        if let end = plannedEnd {
            progress.secondsLeft = max(0, Double((end - deadline).nanoseconds) / 1e9)
        }
        if let trigger = step.trigger {
            progress.trigger = ScenarioProgress.TriggerProgress(
                direction: trigger.direction.rawValue, unit: trigger.unit.rawValue, threshold: trigger.threshold, progress: triggerProgress
            )
        }
        if schedule.hasNext {
            var peek = schedule
            progress.next = peek.next().map { scenario.steps[$0.index].displayName }
        }
        return progress
    }
}
