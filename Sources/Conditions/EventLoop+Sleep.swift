import NIOCore

extension EventLoop {
    /// Sleeps on this loop's timer. The daemon's waits use it rather than `Task.sleep`, which
    /// since Swift 6.3 schedules through the default executor's own clock, libdispatch's, and
    /// not the global-executor hooks linkcondd routes to its event loop: one such sleep starts
    /// libdispatch's pool, whose monitor then wakes the daemon every second for as long as it lives.
    package func sleep(for duration: Duration) async throws {
        let wake = scheduleTask(in: TimeAmount(duration)) {}
        try await withTaskCancellationHandler {
            try await wake.futureResult.get()
        } onCancel: {
            wake.cancel()
        }
    }
}
