import LinkCondVocabulary
import NIOCore

/// The timers of something that plays on a condition over time (a scenario's steps, a trace's
/// windows), and the generation that tells a timer that fires whether what it was set for
/// still plays.
///
/// A timer's callback reaches the actor through a task, after the timer can no longer be
/// cancelled; the generation is what makes it a no-op then. Generations come from one counter
/// per conditioner (`Conditioner.nextGeneration()`), so that a player that replaces another on
/// the same condition never takes a generation the old one's timers still carry.
struct Timeline {
    /// What a timer is for: the next change (a step's end, a trace's next window), or a
    /// reading of a trigger's counter between changes.
    enum Role: Hashable {
        case nextChange
        case poll
    }

    private(set) var generation: UInt64
    private var timers: [Role: Scheduled<Void>] = [:]

    init(generation: UInt64) {
        self.generation = generation
    }

    /// What a timer set now carries.
    func ticket(for condition: ConditionID) -> TimelineTicket {
        TimelineTicket(condition: condition, generation: generation)
    }

    func isCurrent(_ ticket: TimelineTicket) -> Bool {
        ticket.generation == generation
    }

    /// Keeps `timer` as the one for `role`, in place of the one before (cancelled, should it
    /// not have fired).
    mutating func keep(_ timer: Scheduled<Void>, as role: Role) {
        timers[role]?.cancel()
        timers[role] = timer
    }

    /// Cancels every timer and moves on to `generation`: timers already on their way find
    /// themselves stale.
    mutating func restart(as generation: UInt64) {
        cancel()
        timers = [:]
        self.generation = generation
    }

    func cancel() {
        for timer in timers.values {
            timer.cancel()
        }
    }
}

/// Names the timeline a timer was set on: which condition, which generation of its player.
struct TimelineTicket: Sendable, Equatable {
    var condition: ConditionID
    var generation: UInt64
}
