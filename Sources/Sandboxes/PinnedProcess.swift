/// A process held by a descriptor (a pidfd) while the daemon reads its owner, and then its
/// network namespace, through `/proc/PID`. That it still runs after the second reading proves
/// both were of this process: a PID is handed out again only once its process has exited, so
/// another process that took the PID in between would leave this one not running.
public final class PinnedProcess {
    public let pid: Int32
    /// The user who owns the process, as `/proc/PID` says.
    public let owner: UInt32
    private let stillRunning: () -> Bool
    private let release: () -> Void

    public init(pid: Int32, owner: UInt32, stillRunning: @escaping () -> Bool, release: @escaping () -> Void = {}) {
        self.pid = pid
        self.owner = owner
        self.stillRunning = stillRunning
        self.release = release
    }

    deinit { release() }

    public var isRunning: Bool { stillRunning() }
}
