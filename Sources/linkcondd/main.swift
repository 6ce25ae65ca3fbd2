import Conditions
import ControlHTTP
import LinkCondDaemon
import NIOCore
import NIOPosix

HugePages.disableForThisProcess()
SchedulingPriority.raiseForThisProcess()

// One event loop for everything: NIO's I/O and Swift concurrency share a single thread, and no
// libdispatch pool (whose monitor wakes the process every second) ever starts.
NIOSingletons.groupLoopCountSuggestion = 1
let tasksOnEventLoop = EventLoopGlobalExecutor.install()

do {
    let command = try DaemonCommand.parse()
    try await command.start(tasksOnEventLoop: tasksOnEventLoop)
} catch {
    DaemonCommand.exit(withError: error)
}
