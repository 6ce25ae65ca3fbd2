import LinkCondVocabulary
import NIOCore
import Profiles

/// A trace-driven profile playing on one condition: when its traces began, and the timeline that
/// changes the link's rate next.
///
/// The rate is reckoned from `started` every time, never from the last change, so that a timer
/// that fires late delays one change without shifting the ones after it.
struct TracePlayback {
    /// The profile as its file has it (traces, no rates): what plays.
    let profile: Profile
    let started: NIODeadline
    /// The timer of the next window's change.
    var timeline: Timeline
    /// How much before a window's boundary its change starts: what the changes before took from
    /// their timer to the kernel having the rate (a timer's latency, a netlink round trip), so
    /// that the kernel changes on the boundary, not that much after it. Learnt as the trace plays.
    private(set) var lead = TimeAmount.zero
    /// How far into the traces the kernel has been changed: a change made a lead before its
    /// boundary is already in force, and the window before it must not come back.
    var appliedMilliseconds = 0
    /// Whether the last change was refused: the next refusal is not logged again.
    var failing = false

    /// The most lead there is.
    static let longestLead = TimeAmount.milliseconds(50)
    /// How much earlier still an outage's end is changed. Its first packet owes until the
    /// outage's end: a rate changed a little early is not used until then, where one changed a
    /// little late lets another packet through at the outage's rate, which owes a window more.
    static let outageExitLead = TimeAmount.milliseconds(30)
    /// The most the lead grows by in one change: one change held up once is not the rule.
    static let leadGrowth = TimeAmount.milliseconds(5)

    /// Milliseconds into the traces at `now`, or where the kernel already is when that is later.
    func elapsedMilliseconds(at now: NIODeadline) -> Int {
        max(Int(max((now - started).nanoseconds, 0) / 1_000_000), appliedMilliseconds)
    }

    /// Where the traces are at `now`, for status.
    func progress(at now: NIODeadline) -> TraceProgress {
        let elapsed = elapsedMilliseconds(at: now)
        return TraceProgress(
            elapsedMilliseconds: elapsed, monotonicStartMilliseconds: Double(started.uptimeNanoseconds / 1_000) / 1_000,
            downlink: profile.downlink.trace?.pace(at: elapsed), uplink: profile.uplink.trace?.pace(at: elapsed)
        )
    }

    /// When a window boundary is due.
    func due(_ milliseconds: Int) -> NIODeadline {
        started + .milliseconds(Int64(milliseconds))
    }

    /// Moves the lead half the way to what would have put the change that ended at `changedAt`
    /// on its boundary, growing by at most `leadGrowth`: early changes shorten it, late ones
    /// lengthen it.
    mutating func learnLead(changedAt: NIODeadline, due milliseconds: Int) {
        let late = (changedAt - due(milliseconds)).nanoseconds
        let lead = self.lead.nanoseconds + min(late / 2, Self.leadGrowth.nanoseconds)
        self.lead = .nanoseconds(min(max(lead, 0), Self.longestLead.nanoseconds))
    }
}

extension Condition {
    /// What the kernel should have for `profile` at `now`: where its traces are when the same
    /// profile already plays on the condition (a lease renewed, a scenario step that repeats
    /// it), so that they go on from there, else their start.
    func paced(_ profile: Profile?, at now: NIODeadline) -> Profile? {
        guard let profile, profile.isTraceDriven else { return profile }
        if let playing = trace, playing.profile == profile {
            return profile.paced(at: playing.elapsedMilliseconds(at: now)).profile
        }
        return profile.paced(at: 0).profile
    }
}
