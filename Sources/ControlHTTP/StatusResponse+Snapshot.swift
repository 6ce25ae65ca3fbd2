import Conditions
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import Profiles
import Shaping

// The domain's snapshots as the API's documents: times in ISO 8601, rates and sizes in the
// same human units as the profile files.

extension StatusResponse {
    init(_ snapshot: ConditionSnapshot) {
        let id = snapshot.id
        self.init(
            id: id.description, isDefault: snapshot.isDefault, interface: snapshot.target.interface,
            namespace: id.namespace?.description, peer: id.peer?.description, ifb: snapshot.target.ifb,
            active: snapshot.isActive, profile: snapshot.entry.map { ProfileDocument($0) }, since: snapshot.since.formatted(.iso8601),
            exemptions: snapshot.exemptions, lease: snapshot.lease.map(LeaseDocument.init)
        )
        addresses = snapshot.addresses.map { $0.map(formatIPAddress) }
        kernel = snapshot.kernel.map { $0.map(KernelObjectDocument.init) }
        sandbox = snapshot.sandbox.map { sandbox in
            SandboxDocument(
                address: sandbox.sandboxAddressText, gateway: sandbox.hostAddressText, hostInterface: sandbox.hostInterface,
                warnings: snapshot.sandboxWarnings.isEmpty ? nil : snapshot.sandboxWarnings
            )
        }
        scenario = snapshot.scenario.map(ScenarioStatusDocument.init)
        trace = snapshot.trace.map(TracePlaybackDocument.init)
    }
}

extension ConditionListResponse {
    init(_ snapshots: [ConditionSnapshot]) {
        self.init(conditions: snapshots.map(StatusResponse.init))
    }
}

extension LeaseDocument {
    init(_ lease: LeaseSnapshot) {
        self.init(
            profile: lease.profile, holder: lease.holder, kind: lease.clientBound ? .clientBound : .timed,
            expires: lease.expires?.formatted(.iso8601), secondsLeft: lease.secondsLeft, restores: lease.restores
        )
    }
}

extension LeaseEvent {
    /// The last line of a lease's stream when it ended without its client.
    init(_ end: LeaseEnd) {
        let reason: EndReason
        var takenBy: Holder?
        switch end.reason {
        case .released: reason = .released
        case .expired: reason = .expired
        case .takenOver(let holder): (reason, takenBy) = (.takenOver, holder)
        case .shutdown: reason = .shutdown
        case .namespaceEnded: reason = .namespaceEnded
        }
        self.init(event: .ended, reason: reason, by: takenBy, status: StatusResponse(end.condition))
    }
}

extension KernelObjectDocument {
    init(_ reading: KernelObjectReading) {
        let counters = reading.statistics
        self.init(
            device: reading.device, object: reading.object, packets: counters.packets, bytes: counters.bytes, drops: counters.drops,
            overlimits: counters.overlimits, queuedPackets: counters.queuedPackets, queuedBytes: counters.queuedBytes
        )
    }
}

extension ScenarioStatusDocument {
    init(_ progress: ScenarioProgress) {
        self.init(
            name: progress.name, file: progress.file, seed: progress.seed, step: progress.step, steps: progress.steps,
            stepName: progress.stepName, round: progress.round, stepSince: progress.stepSince.formatted(.iso8601),
            secondsInStep: progress.secondsInStep, endsBy: progress.endsBy, secondsLeft: progress.secondsLeft,
            trigger: progress.trigger.map {
                TriggerProgressDocument(direction: $0.direction, unit: $0.unit, threshold: $0.threshold, progress: $0.progress)
            },
            next: progress.next, finished: progress.finished,
            timeInSteps: progress.timeInSteps.map { StepTimeDocument(step: $0.step, name: $0.name, seconds: $0.seconds) }
        )
    }
}

extension TracePlaybackDocument {
    init(_ progress: TraceProgress) {
        func rate(_ pace: TracePace?) -> TraceRateDocument? {
            pace.map { TraceRateDocument(capacity: $0.capacity.description, rate: $0.rate.description, changesAtMilliseconds: $0.endsAtMilliseconds) }
        }
        self.init(
            elapsedMilliseconds: progress.elapsedMilliseconds, monotonicStartMilliseconds: progress.monotonicStartMilliseconds,
            downlink: rate(progress.downlink), uplink: rate(progress.uplink)
        )
    }
}

extension ReloadResponse {
    init(_ outcome: ReloadOutcome) {
        self.init(
            profiles: outcome.profiles, problems: outcome.problems.map(ProfileProblem.init), reapplied: outcome.reapplied,
            status: StatusResponse(outcome.condition)
        )
    }
}

extension ProfileListResponse {
    init(_ catalog: ProfileCatalog, files: ProfileFiles) {
        self.init(profiles: catalog.sortedEntries.map { ProfileSummary($0, files: files) }, problems: catalog.problems.map(ProfileProblem.init))
    }
}

extension ScenarioListResponse {
    init(_ catalog: ScenarioCatalog) {
        self.init(scenarios: catalog.sortedEntries.map(ScenarioSummary.init), problems: catalog.problems.map(ProfileProblem.init))
    }
}

extension ScenarioSummary {
    init(_ entry: ScenarioEntry) {
        let scenario = entry.scenario
        self.init(
            name: scenario.name, description: scenario.description, file: entry.file,
            steps: scenario.steps.map { step in
                var text = step.displayName
                if step.handsOver { text += ", handed over," }
                if step.resetsConnections { text += ", connections reset," }
                if let duration = step.duration { text += " for \(duration)" }
                if let trigger = step.trigger { text += (step.duration == nil ? " until " : " or until ") + trigger.description }
                if step.waitsForNext { text += " until linkcond next" }
                if step.repeatCount > 1 { text += ", \(step.repeatCount) times" }
                return text
            },
            repeats: scenario.loops ? "loops" : scenario.repeatCount == 1 ? "once" : "\(scenario.repeatCount) times"
        )
    }
}

extension ResetResponse {
    init(_ report: ResetReport) {
        self.init(
            reset: report.outcome.reset, alreadyGone: report.outcome.alreadyGone, connections: report.connections,
            condition: StatusResponse(report.condition)
        )
    }
}
