import ArgumentParser
import LinkCondClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `--socket`, accepted before or after the subcommand, with `LINKCOND_SOCKET` as fallback.
struct ConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Control socket of linkcondd. Default: $\(ControlClient.socketEnvironmentVariable), else \(ControlClient.defaultSocketPath).",
        valueName: "path"
    ))
    var socket: String?

    var socketPath: String {
        Self.resolve(socket: socket, environment: ProcessInfo.processInfo.environment)
    }

    static func resolve(socket: String?, environment: [String: String]) -> String {
        socket ?? ControlClient.socketPath(environment: environment)
    }

    var client: ControlClient {
        ControlClient(socketPath: socketPath)
    }

    /// One request to the daemon; a failure becomes one line on stderr, with the command's
    /// hint for its code, and a non-zero exit.
    func request<Answer>(
        hints: CommandHints = [:], _ body: (ControlClient) async throws(ControlClientError) -> Answer
    ) async throws -> Answer {
        let client = self.client
        return try await withDaemon(hints: hints) { () async throws(ControlClientError) in try await body(client) }
    }
}
