import Glibc

/// Runs the daemon ahead of the machine's ordinary work. A scenario's step and a trace's window
/// are due at a time: at the default niceness, beside the busy processes of a test (under
/// User-mode Linux, a probe's streams each way), a timed step began up to 35 ms late where the
/// daemon's own work took 3 to 5 ms; at -10 the latest was 24 ms. The daemon sleeps nearly all
/// the time, so what it takes from the others is what it needs. Called first thing: Linux keeps
/// a niceness per thread, and threads inherit it as they start.
public enum SchedulingPriority {
    public static let niceness: Int32 = -10

    /// False when the process may not raise it (no CAP_SYS_NICE: systemd's `Nice=` does it
    /// for the service instead); the daemon runs on regardless.
    @discardableResult
    public static func raiseForThisProcess() -> Bool {
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        guard errno == 0, current > niceness else { return errno == 0 }
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) == 0
    }

    /// The calling thread's niceness now.
    public static var current: Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
}
