import Conditions
import ControlHTTP
import Logging
import ServiceLifecycle
import Shaping
import Synchronization

/// The conditions, as a service: nothing to do while the daemon runs (requests reach them
/// through the control socket); stopped first, while the sockets still serve, so that every
/// lease's client hears why its condition ended before its connection closes.
final class ConditionsService: Service, CustomStringConvertible {
    let conditioner: Conditioner
    let leaseStreams: LeaseStreams
    let notifier: SystemdNotifier
    let interface: String
    let logger: Logger
    /// What removing the shaping failed with, for the daemon to exit with.
    let failure = Mutex<ShapingError?>(nil)

    init(conditioner: Conditioner, leaseStreams: LeaseStreams, notifier: SystemdNotifier, interface: String, logger: Logger) {
        self.conditioner = conditioner
        self.leaseStreams = leaseStreams
        self.notifier = notifier
        self.interface = interface
        self.logger = logger
    }

    var description: String { "the conditions on \(interface)" }

    /// Waits for the daemon to stop (or the service group to give up), then ends every lease,
    /// removes all shaping and gives lease clients up to two seconds to read their last line.
    func run() async {
        try? await gracefulShutdown()
        notifier.stopping()
        logger.notice("stopping: removing all shaping from \(interface)")
        do {
            try await conditioner.shutdown()
        } catch {
            logger.error("stopping: \(error)")
            failure.withLock { $0 = error }
        }
        await leaseStreams.waitUntilClosed(timeout: .seconds(2), on: conditioner.eventLoop)
    }
}
