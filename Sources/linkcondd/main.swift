import LinkCondDaemon
import NIOCore
import NIOPosix

HugePages.disableForThisProcess()

// One event loop for everything: NIO's I/O and Swift concurrency share a single thread.
NIOSingletons.groupLoopCountSuggestion = 1
NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

do {
    let command = try DaemonCommand.parse()
    try await command.start()
} catch {
    DaemonCommand.exit(withError: error)
}
