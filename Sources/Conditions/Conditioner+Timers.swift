import NIOCore

// The one way the conditioner's timers call back: a lease's expiry, a scenario step's end or
// trigger poll, a trace's next window. The timer fires on the event loop and hands its ticket
// to the actor; the action finds out from the ticket whether what it was set for still holds.

extension Conditioner {
    func schedule<Ticket: Sendable>(
        at deadline: NIODeadline, _ ticket: Ticket, _ action: @escaping @Sendable (isolated Conditioner, Ticket) -> Void
    ) -> Scheduled<Void> {
        eventLoop.scheduleTask(deadline: deadline) {
            Task { await self.fire(action, with: ticket) }
        }
    }

    /// `delay` from now as the event loop counts time (a test's loop may keep a clock of its own).
    func schedule<Ticket: Sendable>(
        in delay: TimeAmount, _ ticket: Ticket, _ action: @escaping @Sendable (isolated Conditioner, Ticket) -> Void
    ) -> Scheduled<Void> {
        eventLoop.scheduleTask(in: max(delay, .zero)) {
            Task { await self.fire(action, with: ticket) }
        }
    }

    /// A generation no timeline has had.
    func nextGeneration() -> UInt64 {
        lastGeneration += 1
        return lastGeneration
    }

    private func fire<Ticket>(_ action: (isolated Conditioner, Ticket) -> Void, with ticket: Ticket) {
        action(self, ticket)
    }
}
