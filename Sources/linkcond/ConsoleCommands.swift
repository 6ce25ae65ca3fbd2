import ArgumentParser
import Console
import ControlAPI
import LinkCondClient
import Glibc
import NIOCore

/// `linkcond console`: the console in the browser, and the tokens operators sign in with.
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Serve the console in the browser: every condition live, profiles, history; on a gateway, each device's own condition.",
        subcommands: [ServeConsole.self, ConsoleTokenCommand.self],
        defaultSubcommand: ServeConsole.self
    )

    static let defaultTokenSocket = "/run/linkcond-console/token.sock"
}

struct ServeConsole: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the console (the default of linkcond console).",
        discussion: """
            It talks to linkcondd over the control socket with this user's rights, and lets the \
            browser do only what the console allows: anyone who reaches it may look; changing a \
            condition or a profile needs an operator's sign-in (a token from `linkcond console \
            token`). With --devices-on, a device behind that interface may set its own condition, \
            and nothing else. Listen on the LAN only when asked: --listen 192.168.50.1:8053.
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Address and port to serve on: 127.0.0.1:8053, [::]:8053, 192.168.50.1:8053.", valueName: "address:port"))
    var listen = "127.0.0.1:8053"
    @Option(name: .customLong("devices-on"), help: ArgumentHelp(
        "Gateway mode: the interface test devices are behind; each device may set its own condition (--interface IFACE --device ITS-ADDRESS).",
        valueName: "interface"
    ))
    var devicesInterface: String?
    @Option(help: ArgumentHelp("Where operators get tokens (`linkcond console token`).", valueName: "path"))
    var tokenSocket = ConsoleCommand.defaultTokenSocket

    func validate() throws {
        _ = try endpoint()
        if let devicesInterface, let problem = InterfaceName.problem(devicesInterface) {
            throw ValidationError("--devices-on \(devicesInterface): \(problem)")
        }
    }

    /// `host:port`, the host bracketed when it is IPv6.
    func endpoint() throws -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--listen \(listen): give an address and a port, as 127.0.0.1:8053 or [::]:8053")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--listen \(listen): the address is missing") }
        return (host, port)
    }

    func run() async throws {
        let (host, port) = try endpoint()
        let access = OperatorAccess()
        let app = ConsoleApp(backend: connection.client, access: access, devices: devicesInterface.map(DeviceScope.init(interface:)))
        let server = ConsoleServer(app: app, tokens: access)
        let tokens = try await server.listenForTokens(at: tokenSocket)
        let channel: Channel
        do {
            channel = try await server.listen(host: host, port: port)
        } catch {
            warn("cannot serve on \(listen): \(error)")
            throw ExitCode.failure
        }
        let bound = channel.localAddress?.port ?? port
        let shown = host.contains(":") ? "[\(host)]" : host
        // Written at once, not buffered: a service manager or a test reads it while the console runs.
        let line = Array("linkcond console: http://\(shown):\(bound)/ (operators: linkcond console token --token-socket \(tokenSocket))\n".utf8)
        _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        try await channel.closeFuture.get()
        try await tokens.close()
    }
}

struct ConsoleTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a token to sign in to the console as an operator; it expires.",
        discussion: "Only root and the linkcond group can reach the token socket. Paste the token into the console's Operator box; it lasts --for (at most 7d), or until the console restarts."
    )

    @Option(name: .customLong("for"), help: ArgumentHelp("How long it lasts: 30m, 1h, 7d.", valueName: "duration"))
    var duration = "1h"
    @Option(help: ArgumentHelp("The console's token socket.", valueName: "path"))
    var tokenSocket = ConsoleCommand.defaultTokenSocket
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = ControlClient(socketPath: tokenSocket)
        let path = "/token?for=" + PercentEncoding.encode(duration)
        let token: ConsoleToken
        do {
            token = try await client.withConnection { connection in try await connection.request(.POST, path) as ConsoleToken }
        } catch {
            let reason = (error as? ControlClientError)?.message ?? "\(error)"
            warn("the console's token socket \(tokenSocket): \(reason) (is `linkcond console` running, and are you root or in group linkcond?)")
            throw ExitCode.failure
        }
        try await output.show(token) { $0.token }
    }
}
