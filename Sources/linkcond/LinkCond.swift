import ArgumentParser
import ControlClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

@main
struct LinkCond: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcond",
        abstract: "Switch the network condition linkcondd puts on an interface: Slow Net, Nasty Net, Black Hole, ...",
        discussion: """
            Profiles are found by display name ("Slow Net") or file name ("slow-net"), ignoring case.
            Changing the condition needs root or membership in linkcondd's group (linkcond by default);
            everyone may read the status.
            """,
        subcommands: [List.self, Show.self, Activate.self, Off.self, Release.self, Status.self, Run.self, History.self, Reload.self]
    )

    @OptionGroup var connection: ConnectionOptions
}

/// Runs a request, turning a failure into one line on stderr and a non-zero exit.
func withDaemon<Result>(_ body: () async throws(ControlClientError) -> Result) async throws -> Result {
    do {
        return try await body()
    } catch {
        var message = error.message
        if let suggestions = error.apiError?.suggestions, !suggestions.isEmpty, !message.contains(suggestions[0]) {
            message += " (did you mean " + suggestions.joined(separator: " or ") + "?)"
        }
        warn(message)
        throw ExitCode.failure
    }
}

/// One line on stderr, `linkcond: ...`, in a single write.
func warn(_ message: String) {
    let line = Array("linkcond: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// Pretty, stable JSON for `--json`.
func printJSON<Value: Encodable>(_ value: Value) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
