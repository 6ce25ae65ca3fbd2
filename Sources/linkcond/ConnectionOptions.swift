import ArgumentParser
import ControlClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `--socket`, accepted before or after the subcommand, with `LINKCOND_SOCKET` as fallback.
struct ConnectionOptions: ParsableArguments {
    static let environmentVariable = "LINKCOND_SOCKET"
    static let defaultSocketPath = "/run/linkcond/control.sock"

    @Option(help: ArgumentHelp(
        "Control socket of linkcondd. Default: $\(environmentVariable), else \(defaultSocketPath).",
        valueName: "path"
    ))
    var socket: String?

    var socketPath: String {
        Self.resolve(socket: socket, environment: ProcessInfo.processInfo.environment)
    }

    static func resolve(socket: String?, environment: [String: String]) -> String {
        if let socket { return socket }
        if let fromEnvironment = environment[environmentVariable], !fromEnvironment.isEmpty { return fromEnvironment }
        return defaultSocketPath
    }

    var client: ControlClient {
        ControlClient(socketPath: socketPath)
    }
}
