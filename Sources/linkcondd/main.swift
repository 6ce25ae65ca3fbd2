import LinkCondDaemon
import NIOCore
import NIOPosix

HugePages.disableForThisProcess()

// One event loop for everything: NIO's I/O and Swift concurrency share a single thread. NIO finds
// the runtime's hook for it with dlsym, so only in a Swift runtime linked dynamically; without it,
// tasks run on libdispatch's threads, whose pool monitor wakes the daemon every second for as
// long as it lives (the release binaries, docs/performance.md). The daemon says so at debug level.
NIOSingletons.groupLoopCountSuggestion = 1
let tasksOnEventLoop = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

do {
    let command = try DaemonCommand.parse()
    try await command.start(tasksOnEventLoop: tasksOnEventLoop)
} catch {
    DaemonCommand.exit(withError: error)
}
