import NIOCore
import Synchronization

/// How many lease streams are open; a stopping daemon waits for them to hear why, woken by the
/// last one to close (or its time limit), not by looking again and again.
package final class LeaseStreams: Sendable {
    private struct State {
        var open = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waits whose time ran out before they began waiting.
        var expired: Set<UInt64> = []
    }

    private let state = Mutex(State())

    func opened() {
        state.withLock { $0.open += 1 }
    }

    func closed() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open -= 1
            guard state.open == 0 else { return [] }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once every lease stream has closed, at once if none is open, or after `timeout`.
    package func waitUntilClosed(timeout: TimeAmount, on loop: any EventLoop) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let deadline = loop.scheduleTask(in: timeout) { self.wake(id) }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let noneOpen = state.withLock { state in
                if state.open == 0 || state.expired.remove(id) != nil { return true }
                state.waiters[id] = waiter
                return false
            }
            if noneOpen { waiter.resume() }
        }
        deadline.cancel()
        _ = state.withLock { $0.expired.remove(id) }
    }

    private func wake(_ id: UInt64) {
        let waiter = state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.expired.insert(id)
                return nil as CheckedContinuation<Void, Never>?
            }
            return waiter
        }
        waiter?.resume()
    }
}
