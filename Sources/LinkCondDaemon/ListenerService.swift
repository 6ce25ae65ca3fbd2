import ControlHTTP
import NIOCore
import ServiceLifecycle

/// A bound socket served until the daemon stops: the control socket, or `/metrics` on TCP.
///
/// Stopping closes the listening socket instead of cancelling the accept loop: the loop then
/// still takes every connection already accepted, which NIO requires to be closed through
/// `executeThenClose` (a dropped one traps), and connections open at that moment are served
/// to their end.
struct ListenerService: Service, CustomStringConvertible {
    let server: ControlServer
    let channel: NIOAsyncChannel<ControlServer.Accepted, Never>
    let description: String

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await server.serve(channel)
        } onGracefulShutdown: {
            channel.channel.close(promise: nil)
        }
    }
}
