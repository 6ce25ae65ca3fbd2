import ArgumentParser
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Conditions
import ControlHTTP
import Failures
import LinkCondDaemon
import HostFacts
import Logging
import NIOPosix
import Sandboxes
import ServiceLifecycle
import Shaping

struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcondd",
        abstract: "Shapes a network interface like Apple's Network Link Conditioner; controlled by `linkcond`.",
        discussion: """
            Runs in the foreground as root (or with CAP_NET_ADMIN). SIGTERM and SIGINT remove all \
            shaping and exit 0; SIGHUP re-reads the profile directories. TCP port 22 is never shaped \
            unless --no-ssh-exemption is given. Every local user may read the status; root and \
            members of --group may change it.
            """,
        version: LinkCondVersion.current
    )

    @Option(help: "Interface to shape. Default: the interface of the default route.")
    var interface: String?

    @Option(help: ArgumentHelp("Path of the control socket. Default: \(DaemonConfiguration.defaultSocketPath), or the socket systemd passes.", valueName: "path"))
    var socket: String = DaemonConfiguration.defaultSocketPath

    @Option(name: .customLong("profiles"), help: ArgumentHelp(
        "Directory of profile files, searched before the built-in profiles; repeat for several, earlier first. It replaces the default, \(DaemonConfiguration.systemProfileDirectory), and must exist.",
        valueName: "dir"
    ))
    var profileDirectories: [String] = []

    @Flag(help: "Leave out the built-in profiles: only the --profiles directories (or \(DaemonConfiguration.systemProfileDirectory)) count.")
    var noBuiltinProfiles = false

    @Option(name: .customLong("exempt-port"), help: ArgumentHelp(
        "A port never shaped, as source or destination: 2222 (TCP), 5060/udp. Repeatable; adds to tcp/22.",
        valueName: "port[/tcp|/udp]"
    ))
    var exemptPorts: [String] = []

    @Option(name: .customLong("exempt-cidr"), help: ArgumentHelp(
        "A network never shaped, as source or destination: 10.0.0.0/8, fd00::/8. Repeatable.",
        valueName: "cidr"
    ))
    var exemptNetworks: [String] = []

    @Flag(help: "Shape SSH (TCP port 22) too. Black Hole will then cut remote sessions.")
    var noSshExemption = false

    @Option(help: "Members of this group may change the condition, besides root.")
    var group: String = DaemonConfiguration.defaultGroup

    @Option(help: ArgumentHelp(
        "Also serve GET /metrics (Prometheus's text format) over TCP on this loopback address, e.g. 127.0.0.1:9464 or [::1]:9464. Off by default.",
        valueName: "address:port"
    ))
    var metricsListen: String?

    @Option(help: ArgumentHelp("Directory for the state a restarted daemon recovers from; on a tmpfs, so that a reboot forgets it.", valueName: "dir"))
    var stateDir: String = DaemonConfiguration.defaultStateDirectory

    @Option(help: ArgumentHelp("File that keeps the history of changes (`linkcond history`).", valueName: "path"))
    var historyFile: String = DaemonConfiguration.defaultHistoryFile

    @Option(help: "Least severe messages to log: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Flag(help: "Remove every linkcond tree a daemon left behind, then exit. Run by systemd after the service stops.")
    var cleanup = false

    @Flag(help: .hidden)
    var enableFaultInjection = false

    func validate() throws {
        _ = try exemptions()
    }

    func start(tasksOnEventLoop: Bool) async throws {
        let level = logLevel
        LoggingSystem.bootstrap { _ in DaemonLogHandler(level: level) }
        let logger = Logger(label: "linkcondd")
        logger.debug("runs at niceness \(SchedulingPriority.current) (linkcondd asks for \(SchedulingPriority.niceness))")
        if !tasksOnEventLoop {
            logger.debug("Swift tasks run on libdispatch's threads, not the event loop: the runtime's global-executor hooks were set already")
        }
        do {
            if cleanup {
                return try runCleanup(logger: logger)
            }
            let daemon = try await makeDaemon(logger: logger)
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(
                services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
                logger: logger
            ))
            try await SignalPipe.handling([SIGTERM, SIGINT, SIGHUP]) { signal in
                if signal == SIGHUP {
                    await daemon.reloadProfiles(because: "SIGHUP")
                } else {
                    logger.notice("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping")
                    await group.triggerGracefulShutdown()
                }
            } while: {
                try await group.run()
            }
        } catch let error as DaemonError {
            logger.critical("\(error.message)")
            throw ExitCode.failure
        }
    }

    private func makeDaemon(logger: Logger) async throws -> LinkCondDaemon {
        guard Capabilities.hasNetAdmin() else {
            throw DaemonError(code: .notPermitted, message: "linkcondd needs root or CAP_NET_ADMIN to change traffic control; run it with sudo or grant CAP_NET_ADMIN")
        }
        guard let interface = interface ?? DefaultRoute.interface() else {
            throw DaemonError(code: .noDefaultRoute, message: "there is no default route to take the interface from; pass one with --interface")
        }
        let socketSource: SocketSource
        if let inherited = SystemdNotifier.inheritedSocket() {
            socketSource = .inherited(inherited)
        } else {
            socketSource = .path(absolutePath(socket))
        }
        let configuration = DaemonConfiguration(
            interface: interface,
            socket: socketSource,
            profileDirectories: try ProfileDirectories.searchPath(
                given: profileDirectories.map(absolutePath), builtIn: !noBuiltinProfiles
            ),
            exemptions: try exemptions(),
            stateDirectory: absolutePath(stateDir),
            historyFile: absolutePath(historyFile),
            groupName: group,
            faultInjection: enableFaultInjection,
            metricsListen: try metricsListen.map(SocketSource.metricsListener(parsing:))
        )
        let responder = QueueResponder(logger: logger)
        return try await LinkCondDaemon(
            configuration: configuration, kernel: try openKernel(), filter: NFTablesKernel(responder: responder), namespaces: NetlinkNamespaces(responder: responder),
            sandboxes: sandboxPlumbing(interface: interface), resetter: KernelConnectionResetter(),
            group: MultiThreadedEventLoopGroup.singleton, logger: logger
        )
    }

    private func runCleanup(logger: Logger) throws {
        guard Capabilities.hasNetAdmin() else {
            throw DaemonError(code: .notPermitted, message: "linkcondd --cleanup needs root or CAP_NET_ADMIN")
        }
        let interfaces = [interface ?? DefaultRoute.interface()].compactMap { $0 }
        try Cleanup.run(
            interfaces: interfaces, stateDirectory: absolutePath(stateDir), kernel: try openKernel(), filter: NFTablesKernel(), namespaces: NetlinkNamespaces(),
            sandboxes: interfaces.first.map(sandboxPlumbing(interface:)), logger: logger
        )
    }

    /// Sandboxes' replies come back in on the daemon's interface and on the default route's:
    /// IPv4 forwarding is turned on there while a sandbox exists, and recorded in the state directory.
    private func sandboxPlumbing(interface: String) -> KernelSandboxPlumbing {
        KernelSandboxPlumbing(
            uplinks: { Array(Set([interface] + [DefaultRoute.interface()].compactMap { $0 })).sorted() },
            ledger: absolutePath(stateDir) + "/ipv4-forwarding"
        )
    }

    private func openKernel() throws -> NetlinkKernel {
        do {
            return try NetlinkKernel()
        } catch {
            throw DaemonError(code: .netlink, message: "cannot open a netlink socket: \(error)")
        }
    }

    private func exemptions() throws -> Exemptions {
        do {
            var ports = noSshExemption ? [] : [Exemptions.ssh]
            for text in exemptPorts {
                let port = try PortExemption(parsing: text)
                if !ports.contains(port) { ports.append(port) }
            }
            return Exemptions(ports: ports, networks: try exemptNetworks.map { text throws(ExemptionParseError) in try IPNetwork(parsing: text) })
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

private func absolutePath(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.path
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
