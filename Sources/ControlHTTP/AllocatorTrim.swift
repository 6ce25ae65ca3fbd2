import CMalloc
import Synchronization

/// Gives memory the allocator holds free back to the system once replies have left enough of
/// it: a scrape of many conditions builds documents of tens of kilobytes on whichever threads
/// serve it, and glibc keeps what they freed in those threads' arenas. Checked after each reply,
/// so that an idle daemon has no timer; `mallinfo2` only reads the arenas' totals, and
/// `malloc_trim` runs only when the free bytes grew by `slack` since it last ran (or since they
/// were last lower), so a busy daemon whose free memory stays put does not trim again and again.
final class AllocatorTrim: Sendable {
    /// The allocator is the process's: one baseline for every server in it.
    static let process = AllocatorTrim()
    static let slack = 1 << 20

    private let freeBytes: @Sendable () -> Int
    private let trim: @Sendable () -> Void
    /// The free bytes the allocator held after the last trim, or the lowest seen since.
    private let baseline = Mutex<Int?>(nil)

    init(
        freeBytes: @escaping @Sendable () -> Int = { Int(clamping: mallinfo2().fordblks) },
        trim: @escaping @Sendable () -> Void = { _ = malloc_trim(0) }
    ) {
        self.freeBytes = freeBytes
        self.trim = trim
    }

    func afterReply() {
        let free = freeBytes()
        let trimming = baseline.withLock { baseline -> Bool in
            guard let low = baseline else {
                baseline = free
                return false
            }
            if free < low { baseline = free }
            return free > low + Self.slack
        }
        guard trimming else { return }
        trim()
        let after = freeBytes()
        baseline.withLock { $0 = after }
    }
}
