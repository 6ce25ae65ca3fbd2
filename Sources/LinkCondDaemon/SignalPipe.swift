import Conditions
import ControlHTTP
import CSignalPipe
import Glibc
import NIOCore
import NIOPosix

/// Signals received on the event loop: a C handler writes each one's number into a pipe whose
/// read end is a NIO channel.
///
/// swift-service-lifecycle's `UnixSignalsSequence` receives signals through Dispatch sources, and
/// the first of those starts libdispatch's worker pool, whose monitor then wakes once a second
/// for the life of the process. A pipe wakes the event loop when a signal comes, and at no other
/// time: with the daemon's tasks on its event loop (the debug build), an idle daemon woke 20
/// times in 20 s with signal sources and not once with the pipe (2026-11-27). The release
/// binaries' tasks still run on libdispatch's threads (main.swift), which keeps its monitor.
public enum SignalPipe {
    /// Calls `handle` with each of `signals` as it comes while `body` runs, one at a time and in
    /// order. The handler is process-wide and stays: after `body`, the signals are swallowed.
    public static func handling(
        _ signals: [CInt],
        on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        with handle: @escaping @Sendable (CInt) async -> Void,
        while body: () async throws -> Void
    ) async throws {
        let readEnd = signals.withUnsafeBufferPointer { linkcond_signal_pipe_open($0.baseAddress, CInt($0.count)) }
        guard readEnd >= 0 else {
            throw DaemonError(code: .signals, message: "cannot receive signals: \(String(cString: strerror(-readEnd)))")
        }
        let channel: NIOAsyncChannel<ByteBuffer, Never>
        do {
            channel = try await NIOPipeBootstrap(group: group).takingOwnershipOfDescriptor(input: readEnd) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel(wrappingChannelSynchronously: channel) }
            }
        } catch {
            close(readEnd)
            throw DaemonError(code: .signals, message: "cannot receive signals: \(error)")
        }
        try await channel.executeThenClose { received in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for try await numbers in received {
                        for number in numbers.readableBytesView {
                            await handle(CInt(number))
                        }
                    }
                }
                try await body()
                tasks.cancelAll()
            }
        }
    }
}
