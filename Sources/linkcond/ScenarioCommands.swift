import ArgumentParser
import ControlAPI
import LinkCondClient

struct Scenarios: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the scenarios linkcondd can play, with their steps.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let listing = try await connection.request { client throws(ControlClientError) in try await client.scenarios() }
        try await output.show(listing) { listing in
            ([listing.scenarios.isEmpty ? "no scenarios" : listing.scenarios.map(Format.scenario).joined(separator: "\n\n")]
                + listing.problems.map { "skipped \($0)" }).joined(separator: "\n")
        }
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a scenario: its steps' profiles follow one another, each change in place.",
        discussion: """
            A step ends after its time, once its traffic trigger is reached (20 KB of download), \
            or on 'linkcond next'. After the last step its profile stays in force. Any other \
            change of the condition (activate, off, another play) stops the scenario. With --for, \
            the scenario is a lease: after that long, the condition from before comes back. \
            Examples: linkcond play "Slow Net, then Black Hole"; linkcond play subway --for 10m
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Argument(help: "A scenario's name or file name (see linkcond scenarios).") var name: String
    @Option(name: .customLong("for"), help: ArgumentHelp("Revert by itself after this long: 30s, 5m, 2h.", valueName: "duration"))
    var duration: String?
    @Flag(help: "Take over a lease another client holds.") var force = false
    @Flag(help: "Delete a qdisc on the interface that linkcond did not create, instead of refusing.") var replaceForeign = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try validateDuration(duration)
    }

    func run() async throws {
        let status = try await connection.request(hints: .settingACondition) { client throws(ControlClientError) in
            try await client.play(name, for: duration, force: force, replaceForeign: replaceForeign, condition: target.condition)
        }
        try await output.show(status) { Format.status($0) }
    }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move the scenario playing on a condition on to its next step now."
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let status = try await connection.request { client throws(ControlClientError) in try await client.next(condition: target.condition) }
        try await output.show(status) { Format.status($0) }
    }
}
