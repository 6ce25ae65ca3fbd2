import Conditions
import ControlHTTP
import ControlAPI
import Failures
import Logging
import NIOCore
import NIOPosix
import Profiles
import Sandboxes
import ServiceLifecycle
import Synchronization
import Shaping

/// The daemon as a service: checks, recovery, the control socket, reloading profiles, and a clean stop.
public struct LinkCondDaemon: Service {
    public let configuration: DaemonConfiguration
    public let conditioner: Conditioner
    let server: ControlServer
    /// `GET /metrics` on TCP, with `--metrics-listen`.
    let metricsServer: ControlServer?
    let notifier: SystemdNotifier
    let logger: Logger

    /// Prepares everything that can fail before the socket exists, so a daemon that starts is
    /// one that can shape; then brings the interface to what an earlier daemon left wanted.
    public init(
        configuration: DaemonConfiguration,
        kernel: sending any TrafficControlKernel,
        filter: sending (any PacketFilterKernel)? = nil,
        namespaces: sending (any NamespaceKernels)? = nil,
        sandboxes: sending (any SandboxPlumbing)? = nil,
        resetter: sending (any ConnectionResetter)? = nil,
        group: any EventLoopGroup,
        notifier: SystemdNotifier = SystemdNotifier(),
        logger: Logger
    ) async throws {
        let target = ShapingTarget(interface: configuration.interface)
        let faults = configuration.faultInjection ? FaultSwitch() : nil
        let engine = ShapingEngine(
            kernel: faults.map { FaultInjectingKernel(wrapping: kernel, faults: $0) } ?? kernel,
            filter: filter,
            logger: logger
        )
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
        guard !catalog.entries.isEmpty else {
            throw DaemonError(
                code: .profiles,
                message: "no profiles in \(configuration.profileDirectories.joined(separator: ", "))\(catalog.problems.isEmpty ? "" : " that load (\(catalog.problems.count) skipped, see above)"); give a directory of profile files with --profiles"
            )
        }
        logger.info("\(catalog.entries.count) profiles from \(configuration.profileDirectories.joined(separator: ", "))")
        let scenarioDirectories = ProfileDirectories.scenarioDirectories(beside: configuration.profileDirectories)
        let scenarios = ScenarioCatalog.load(from: scenarioDirectories, profiles: catalog)
        for problem in scenarios.problems {
            logger.warning("skipping scenario: \(problem)")
        }

        let authorizer = Authorizer.system(groupName: configuration.groupName)
        if authorizer.groupID == nil {
            logger.notice("group '\(configuration.groupName)' does not exist: only root may change the condition")
        }
        if let faults {
            logger.warning("fault injection is enabled: PUT \(APIPath.faultInjection) makes a chosen netlink step fail")
            // A sandbox's veth, addresses, route, forwarding and NAT count as steps too.
            sandboxes?.stepFault = { _ in faults.failsNextStep() }
        }

        self.configuration = configuration
        self.notifier = notifier
        self.logger = logger
        self.conditioner = Conditioner(
            engine: engine, target: target, planner: Planner(exemptions: configuration.exemptions),
            catalog: catalog, profileDirectories: configuration.profileDirectories,
            profileFiles: ProfileFiles(directory: ProfileDirectories.savingDirectory(of: configuration.profileDirectories)),
            scenarios: scenarios, scenarioDirectories: scenarioDirectories,
            eventLoop: group.next(), stateDirectory: configuration.stateDirectory,
            historyFile: configuration.historyFile,
            namespaces: namespaces.map { namespaces in faults.map { FaultInjectingNamespaces(wrapping: namespaces, faults: $0) } ?? namespaces },
            sandboxes: sandboxes, resetter: resetter,
            logger: logger
        )
        try await conditioner.recover()
        let router = ControlRouter(
            conditioner: conditioner, authorizer: authorizer, faults: faults, hostNames: HostNameResolver.system(timerLoop: group.next())
        )
        self.server = ControlServer(socket: configuration.socket, router: router, group: group, logger: logger)
        self.metricsServer = configuration.metricsListen.map { address in
            var metricsRouter = router
            metricsRouter.metricsOnly = true
            return ControlServer(socket: address, router: metricsRouter, group: group, logger: logger)
        }
    }

    /// Serves until a graceful shutdown (SIGTERM, SIGINT), then removes all shaping.
    ///
    /// The daemon's parts run as services, stopped in the reverse order of their start: the
    /// conditions first (while the sockets still serve, so that a lease's client hears why its
    /// condition ended), then the namespace watch, the metrics listener and the control socket.
    public func run() async throws {
        let channel = try await server.bind()
        defer {
            if case .path(let path) = configuration.socket { SocketFile.remove(path: path) }
        }
        var listeners = [ListenerService(server: server, channel: channel, description: "the control socket")]
        do {
            if let metricsServer, let metricsListen = configuration.metricsListen {
                let metricsChannel = try await metricsServer.bind()
                listeners.append(ListenerService(server: metricsServer, channel: metricsChannel, description: "GET /metrics on \(metricsListen)"))
                logger.notice("serving GET /metrics on \(metricsListen.description)")
            }
        } catch {
            try? await channel.channel.close()
            throw DaemonError(code: .socket, message: "cannot listen for metrics on \(configuration.metricsListen.map(\.description) ?? ""): \(error)")
        }
        let conditions = ConditionsService(
            conditioner: conditioner, leaseStreams: server.leaseStreams, notifier: notifier,
            interface: configuration.interface, logger: logger
        )
        let services: [any Service] = listeners + [NamespaceWatch(conditioner: conditioner), conditions]
        let parts = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            logger: logger
        ))
        logger.notice("ready: shaping \(configuration.interface), control socket \(configuration.socketDescription), exempt: \(configuration.exemptions.summary)")
        notifier.ready(status: "shaping \(configuration.interface)")
        try await withGracefulShutdownHandler {
            try await parts.run()
        } onGracefulShutdown: {
            Task { await parts.triggerGracefulShutdown() }
        }
        if let failure = conditions.failure.withLock({ $0 }) {
            throw failure
        }
    }

    /// Re-reads the profile directories (SIGHUP): what `POST /v1/reload` does.
    public func reloadProfiles(because reason: String) async {
        logger.notice("\(reason): re-reading \(configuration.profileDirectories.joined(separator: ", "))")
        _ = await conditioner.reload()
    }
}

extension LinkCondDaemon: CustomStringConvertible {
    /// What ServiceLifecycle logs the service as; without it, `String(describing:)` reflects over
    /// every stored property, a sixth of the daemon's start-up time.
    public var description: String { "linkcondd on \(configuration.interface)" }
}
