import ArgumentParser
import CChildProcess
import ControlAPI
import LinkCondClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NameMatching
import NIOCore
import NIOPosix

@main
struct LinkCond: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcond",
        abstract: "Switch the network condition linkcondd puts on an interface: Slow Net, Nasty Net, Black Hole, ...",
        discussion: """
            Profiles are found by display name ("Slow Net") or file name ("slow-net"), ignoring \
            case, spaces and punctuation. Changing the condition needs root or membership in \
            linkcondd's group (linkcond by default); everyone may read the status. \
            'linkcond doctor' checks what a first run needs.
            """,
        version: LinkCondVersion.current,
        subcommands: [
            List.self, Show.self, ProfileCommand.self, Activate.self, Off.self, Release.self, Status.self, Run.self,
            Scenarios.self, Play.self, Next.self, Reset.self, Capture.self, History.self, Watch.self, Reload.self, ConsoleCommand.self, Doctor.self,
        ]
    )

    @OptionGroup var connection: ConnectionOptions

    /// Exit status of a command line that names no command, or one that does not exist.
    static let usageError: Int32 = 64

    /// A bare `linkcond` says how to use it on stderr and fails; a mistyped command gets a
    /// suggestion when one is close. Everything else is the parser's.
    static func main() async {
        linkcond_note_inherited_descriptors()
        // One connection at a time needs one event loop thread: fewer threads, less memory.
        NIOSingletons.groupLoopCountSuggestion = 1
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let problem = usageProblem(arguments) {
            warn(problem)
            Glibc.exit(usageError)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// What is wrong with a command line before the parser sees it, if anything.
    static func usageProblem(_ arguments: [String]) -> String? {
        var rest = arguments[...]
        // Options that may stand before the command.
        while let first = rest.first, first.hasPrefix("-") {
            if ["-h", "--help", "--version", "--generate-completion-script", "--experimental-dump-help"].contains(where: { first.hasPrefix($0) }) {
                return nil
            }
            rest = rest.dropFirst(first == "--socket" ? 2 : 1)
        }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard let word = rest.first else {
            return "no command given\n" + shortUsage(names: names)
        }
        guard !names.contains(word) else { return nil }
        if let close = closestName(to: word, among: names) {
            return "'\(word)' is not a linkcond command; did you mean '\(close)'?"
        }
        return "'\(word)' is not a linkcond command\n" + shortUsage(names: names)
    }

    static func shortUsage(names: [String]) -> String {
        """
        usage: linkcond [--socket PATH] COMMAND ...
        commands: \(names.filter { $0 != "help" }.joined(separator: ", "))
        e.g. linkcond list; sudo linkcond activate "Slow Net"; linkcond status; sudo linkcond off
        'linkcond --help' and 'linkcond help COMMAND' tell more.
        """
    }
}

/// Runs a request, turning a failure into one line on stderr and a non-zero exit: the daemon's
/// message, what it suggests, and the command's own hint for the error's code.
func withDaemon<Result>(
    hints: CommandHints = [:], _ body: () async throws(ControlClientError) -> Result
) async throws -> Result {
    do {
        return try await body()
    } catch {
        var message = error.message
        if let suggestions = error.apiError?.suggestions, !suggestions.isEmpty, !message.contains(suggestions[0]) {
            message += " (did you mean " + suggestions.joined(separator: " or ") + "?)"
        }
        warn(hints.appended(to: message, for: error))
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
    print(String(decoding: try jsonText(value), as: UTF8.self))
}

/// `value` as `printJSON` prints it, into the file at `path`, replacing it.
func writeJSON<Value: Encodable>(_ value: Value, to path: String) throws {
    try (jsonText(value) + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
}

private func jsonText<Value: Encodable>(_ value: Value) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return try encoder.encode(value)
}
