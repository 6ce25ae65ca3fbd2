@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Synchronization
import Testing

@Suite("The allocator's free memory, given back after replies")
struct AllocatorTrimTests {
    /// An allocator whose free bytes the test sets, counting trims; a trim frees what it can.
    final class FakeAllocator: Sendable {
        let free = Mutex(0)
        let trims = Mutex(0)
        let keptByTrim = Mutex(0)

        func trimmer() -> AllocatorTrim {
            AllocatorTrim(
                freeBytes: { self.free.withLock { $0 } },
                trim: {
                    self.trims.withLock { $0 += 1 }
                    let kept = self.keptByTrim.withLock { $0 }
                    self.free.withLock { $0 = min($0, kept) }
                }
            )
        }

        func reply(freeing bytes: Int, _ trimmer: AllocatorTrim) {
            free.withLock { $0 = bytes }
            trimmer.afterReply()
        }
    }

    @Test("Trims once the free bytes grew by more than the slack, not before, and not again while they stay")
    func growth() {
        let allocator = FakeAllocator()
        let trimmer = allocator.trimmer()
        let slack = AllocatorTrim.slack
        allocator.reply(freeing: 200_000, trimmer)
        allocator.reply(freeing: 200_000 + slack, trimmer)
        #expect(allocator.trims.withLock { $0 } == 0)
        allocator.keptByTrim.withLock { $0 = 300_000 }
        allocator.reply(freeing: 200_001 + slack, trimmer)
        #expect(allocator.trims.withLock { $0 } == 1)
        // The baseline is now what the trim left: the same free bytes again do not trim.
        allocator.reply(freeing: 300_000, trimmer)
        allocator.reply(freeing: 300_000 + slack, trimmer)
        #expect(allocator.trims.withLock { $0 } == 1)
    }

    @Test("A trim that could free nothing is not repeated after every reply")
    func fragmented() {
        let allocator = FakeAllocator()
        let trimmer = allocator.trimmer()
        allocator.reply(freeing: 0, trimmer)
        allocator.keptByTrim.withLock { $0 = .max }
        for _ in 0..<10 {
            allocator.reply(freeing: 3 * AllocatorTrim.slack, trimmer)
        }
        #expect(allocator.trims.withLock { $0 } == 1)
    }

    @Test("The baseline follows the free bytes down, so growth is measured from the lowest")
    func followsDown() {
        let allocator = FakeAllocator()
        let trimmer = allocator.trimmer()
        allocator.reply(freeing: 2 * AllocatorTrim.slack, trimmer)
        allocator.reply(freeing: 0, trimmer)
        allocator.reply(freeing: AllocatorTrim.slack + 1, trimmer)
        #expect(allocator.trims.withLock { $0 } == 1)
    }
}
