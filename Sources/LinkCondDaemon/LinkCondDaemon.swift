import Logging
import NIOCore
import NIOPosix
import Profiles
import ServiceLifecycle
import Shaping

/// The daemon as a service: checks, leftovers, the control socket, and a clean stop.
public struct LinkCondDaemon: Service {
    public let configuration: DaemonConfiguration
    public let conditioner: Conditioner
    let server: ControlServer
    let logger: Logger

    /// Prepares everything that can fail before the socket exists, so a daemon that starts is
    /// one that can shape.
    public init(
        configuration: DaemonConfiguration,
        kernel: sending any TrafficControlKernel,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws {
        let target = ShapingTarget(interface: configuration.interface)
        let engine = ShapingEngine(kernel: kernel, logger: logger)
        let survey: KernelSurvey
        do {
            survey = try engine.survey(target)
        } catch {
            throw DaemonError(code: .netlink, message: error.message)
        }
        guard survey.interface != nil else {
            throw DaemonError(code: .interfaceMissing, message: "interface \(configuration.interface) does not exist; pass the one to shape with --interface")
        }

        let catalog = ProfileCatalog.load(from: configuration.profileDirectories)
        for problem in catalog.problems {
            logger.warning("skipping profile: \(problem)")
        }
        for shadow in catalog.shadowed {
            logger.info("\(shadow.file) is overridden by \(shadow.by)")
        }
        logger.info("\(catalog.entries.count) profiles from \(configuration.profileDirectories.joined(separator: ", "))")

        self.configuration = configuration
        self.logger = logger
        self.conditioner = Conditioner(
            engine: engine, target: target, planner: Planner(exemptions: configuration.exemptions),
            catalog: catalog, logger: logger
        )
        try await conditioner.removeLeftovers()
        self.server = ControlServer(
            socketPath: configuration.socketPath,
            router: ControlRouter(conditioner: conditioner),
            group: group,
            logger: logger
        )
    }

    /// Serves until a graceful shutdown (SIGTERM, SIGINT), then removes all shaping.
    public func run() async throws {
        let channel = try await server.bind()
        defer { SocketFile.remove(path: configuration.socketPath) }
        logger.notice("ready: shaping \(configuration.interface), control socket \(configuration.socketPath), exempt: \(configuration.exemptions.summary)")
        do {
            try await cancelWhenGracefulShutdown {
                try await server.serve(channel)
            }
        } catch is CancellationError {
            // The graceful shutdown itself.
        }
        logger.notice("stopping: removing all shaping from \(configuration.interface)")
        _ = try await conditioner.deactivate()
    }
}
