import Conditions
import ControlHTTP
import CMalloc

/// Keeps the daemon's memory in small pages. A kernel that hands out transparent huge pages
/// always (Debian's default) backs a heap region touched anywhere with 2 MiB at once, so the
/// daemon's RSS moved by 2 MiB from one start to the next for the same work (11.5 and 13.5 MiB
/// once started, 2026-11-26): against a 15 MB budget, that is the difference. Called first
/// thing, before the allocator's heaps grow; inherited by the processes the daemon starts.
public enum HugePages {
    /// False when the kernel refused (before Linux 3.15): the daemon runs on regardless.
    @discardableResult
    public static func disableForThisProcess() -> Bool {
        linkcond_disable_transparent_huge_pages() == 0
    }
}
