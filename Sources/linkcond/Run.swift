import ArgumentParser
import ControlAPI
import ControlClient
import Foundation
import Glibc

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command under a profile, then restore the previous condition.",
        discussion: """
            The profile holds while the command runs and ends when it exits, whatever its exit \
            status, which linkcond passes through. It also ends if linkcond itself is killed: the \
            daemon sees the connection close. Example: linkcond run --profile "Slow Net" -- npm test
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Display name or file name of the profile.") var profile: String
    @Option(name: .customLong("for"), help: ArgumentHelp("Restore the previous condition after this long even if the command still runs.", valueName: "duration"))
    var duration: String?
    @Flag(help: "Take over a lease another client holds.") var force = false
    @Flag(help: "Delete a qdisc on the interface that linkcond did not create, instead of refusing.") var replaceForeign = false
    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments, after --.") var command: [String] = []

    func validate() throws {
        try validateDuration(duration)
        guard !arguments.isEmpty else {
            throw ValidationError("give the command to run after --, e.g. linkcond run --profile \"Slow Net\" -- npm test")
        }
    }

    /// The command without the `--` that separates it.
    var arguments: [String] {
        command.first == "--" ? Array(command.dropFirst()) : command
    }

    func run() async throws {
        let client = connection.client
        let request = LeaseRequest(profile: profile, for: duration, force: force ? true : nil, replaceForeign: replaceForeign ? true : nil)
        let arguments = self.arguments
        let outcome: (Int32, LeaseEvent?)
        do {
            outcome = try await client.withLease(request, interrupted: { event in
                warn(Format.leaseInterruption(event))
            }) { status in
                warn("\(status.profile?.name ?? profile) on \(status.interface) while \(arguments[0]) runs")
                return try await ChildProcess.run(arguments)
            }
        } catch let error as ControlClientError {
            warn(error.message)
            throw ExitCode.failure
        } catch let error as ChildProcess.LaunchError {
            warn(error.description)
            throw ExitCode(127)
        }
        if outcome.1 == nil {
            warn("lost the connection to linkcondd before it confirmed the end of the lease; check 'linkcond status'")
        }
        throw ExitCode(outcome.0)
    }
}

func warn(_ message: String) {
    FileHandle.standardError.write(Data("linkcond: \(message)\n".utf8))
}
