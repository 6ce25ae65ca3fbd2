import Glibc
import Netlink
import Synchronization

/// The machine's one drop monitor, in packet mode while any capture keeps the packets its
/// condition dropped: started by the first such capture, stopped by the last. A monitor some
/// other program started (or a linkcondd that ended without stopping it) is left as it is:
/// joined when it reports packets, never stopped.
enum DropMonitor {
    private struct State {
        var users = 0
        /// Whether linkcondd started it, and so stops it.
        var started = false
    }

    private static let state = Mutex(State())

    /// Makes sure the monitor reports dropped packets, for one more capture.
    static func acquire() throws(CaptureError) {
        let result: Result<Void, CaptureError> = state.withLock { state in
            if state.users == 0 {
                do throws(NetlinkError) {
                    state.started = try startInPacketMode()
                } catch {
                    return .failure(CaptureError(.kernelRefused, "cannot keep the dropped packets: \(error)"))
                }
            }
            state.users += 1
            return .success(())
        }
        try result.get()
    }

    /// Configures and starts the monitor; false when it runs already (another program's, or a
    /// linkcondd's that ended without stopping it): its alerts are packets or summaries, and
    /// `DroppedPackets` takes the packets.
    private static func startInPacketMode() throws(NetlinkError) -> Bool {
        let control = try DropMonitorSocket.open()
        do {
            try control.configureForPackets(truncateLength: 0, queueLength: 1_000)
            try control.start()
            return true
        } catch where error.errno == EBUSY || error.errno == EAGAIN {
            return false
        }
    }

    /// One capture fewer; the last one stops the monitor linkcondd started.
    static func release() {
        state.withLock { state in
            guard state.users > 0 else { return }
            state.users -= 1
            if state.users == 0 && state.started {
                try? DropMonitorSocket.open().stop()
                state.started = false
            }
        }
    }
}
