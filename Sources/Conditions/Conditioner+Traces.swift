import LinkCondVocabulary
import NIOCore
import Profiles

// Trace-driven links: a profile whose direction gives `trace:` plays its trace by changing the
// direction's htb class rate in place, window by window, for as long as it is in force.

extension Conditioner {
    /// Plays the condition's effective profile's traces, or stops playing when it has none. The
    /// same profile playing goes on untouched; another starts from now, which should be right
    /// after the kernel got its first window, so that the window lasts as long as the trace says.
    func followTraces(_ condition: inout Condition) {
        let profile = condition.policy.effective?.profile
        if let playing = condition.trace, playing.profile == profile { return }
        stopTraces(&condition)
        guard let profile, profile.isTraceDriven else { return }
        condition.trace = TracePlayback(profile: profile, started: monotonicNow, timeline: Timeline(generation: nextGeneration()))
        scheduleTraceChange(&condition, after: profile.paced(at: 0).changesAtMilliseconds)
    }

    /// Stops the condition's trace playback, if any; the rate in force stays.
    func stopTraces(_ condition: inout Condition) {
        condition.trace?.timeline.cancel()
        condition.trace = nil
    }

    private func scheduleTraceChange(_ condition: inout Condition, after dueMilliseconds: Int?) {
        guard let playback = condition.trace, let dueMilliseconds else { return }
        let endsOutage = playback.profile.endsOutage(at: dueMilliseconds)
        let early = playback.lead + (endsOutage ? TracePlayback.outageExitLead : .zero)
        let timer = schedule(at: playback.due(dueMilliseconds) - early, playback.timeline.ticket(for: condition.id)) { conditioner, ticket in
            conditioner.changeTraceRate(ticket, due: dueMilliseconds, endsOutage: endsOutage)
        }
        condition.trace?.timeline.keep(timer, as: .nextChange)
    }

    /// A window boundary, due `due` milliseconds into the traces: the link gets the traces' rate
    /// from now on. A change that `endsOutage` is made `TracePlayback.outageExitLead` early. A
    /// refusal is logged and the playback goes on: the next window may well be accepted.
    private func changeTraceRate(_ ticket: TimelineTicket, due: Int, endsOutage: Bool) {
        guard var condition = registry[ticket.condition], let playback = condition.trace, playback.timeline.isCurrent(ticket) else {
            return
        }
        defer { settle(condition) }
        // A timer fired early, by the lead, still changes to the window it was set for.
        let elapsed = max(playback.elapsedMilliseconds(at: monotonicNow), due)
        let (paced, changesAt) = playback.profile.paced(at: elapsed)
        do {
            try condition.converge(to: paced, replacingForeign: false)
            condition.trace?.appliedMilliseconds = elapsed
            if !endsOutage {
                condition.trace?.learnLead(changedAt: monotonicNow, due: due)
            }
            if playback.failing {
                condition.trace?.failing = false
                logger.notice("the trace of '\(playback.profile.name)' on \(condition.id) plays again, \(elapsed) ms into it")
            }
        } catch {
            // Logged once for a run of refusals (a deleted interface refuses every window).
            if !playback.failing {
                condition.trace?.failing = true
                logger.error("cannot change the rate of '\(playback.profile.name)' on \(condition.id) at \(elapsed) ms into its trace: \(error); trying again at each window")
            }
        }
        scheduleTraceChange(&condition, after: changesAt)
    }
}
