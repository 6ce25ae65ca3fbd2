import CGlobalExecutorHooks
import NIOCore
import NIOPosix

/// Swift concurrency's global executor made NIO's singleton event loop, so the daemon's tasks and
/// its I/O share one thread and an idle daemon sleeps in epoll with nothing to wake it.
///
/// NIO's `unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor` does this only
/// where dlsym finds the runtime's hook, which the statically linked release binaries hide; the
/// C shim sets the hooks by linking against them, the delayed ones too. `Task.sleep` reaches none
/// of them in Swift 6.3 (it schedules on the default executor, libdispatch): the daemon sleeps
/// with `EventLoop.sleep(for:)` instead.
enum EventLoopGlobalExecutor {
    /// Installs the singleton group's loop as the global executor. Returns false, changing
    /// nothing, if the runtime's hooks were set already. Call it once, before the first task.
    static func install() -> Bool {
        linkcond_global_executor_hooks_install { job, delayNanoseconds in
            // The runtime's job pointer is what an `UnownedJob` holds.
            let job = unsafeBitCast(job, to: UnownedJob.self)
            let loop = MultiThreadedEventLoopGroup.singleton.any()
            if delayNanoseconds == 0 {
                loop.enqueue(ExecutorJob(job))
            } else {
                loop.scheduleTask(in: .nanoseconds(Int64(clamping: delayNanoseconds))) {
                    loop.enqueue(ExecutorJob(job))
                }
            }
        }
    }
}
