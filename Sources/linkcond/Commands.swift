import ArgumentParser
import ControlAPI
import LinkCondClient

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the profiles linkcondd knows; * marks the active one.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let listing = try await connection.request { client throws(ControlClientError) in try await client.profiles() }
        try await output.show(listing) { listing in
            let status = try await connection.request { client throws(ControlClientError) in try await client.status() }
            return ([Format.profileTable(listing.profiles, active: status.profile?.name)] + listing.problems.map { "skipped \($0)" })
                .joined(separator: "\n")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one profile's values.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Display name or file name of the profile.") var name: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let profile = try await connection.request { client throws(ControlClientError) in try await client.profile(named: name) }
        try await output.show(profile) { Format.profile($0) }
    }
}

struct Activate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put the interface into a condition; switching from another one is seamless.",
        discussion: """
            The condition is a profile (by display name or file name, ignoring case, spaces and \
            punctuation), a profile file (./my-profile.yaml), or given by options: \
            linkcond activate --rate 1Mbit --delay 100ms --loss 1%
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Argument(help: "A profile's name, or a profile file.") var name: String?
    @OptionGroup(title: "Condition without a profile") var condition: ConditionOptions
    @Option(name: .customLong("for"), help: ArgumentHelp("Revert by itself after this long: 30s, 5m, 2h.", valueName: "duration"))
    var duration: String?
    @Flag(help: "Take over a lease another client holds.") var force = false
    @Flag(help: "Delete a qdisc on the interface that linkcond did not create, instead of refusing. It is not restored afterwards.")
    var replaceForeign = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try validateDuration(duration)
        _ = try ProfileSelection.resolve(argument: name, options: condition, commandName: "linkcond activate")
    }

    func run() async throws {
        let selection = try ProfileSelection.resolve(argument: name, options: condition, commandName: "linkcond activate")
        let status = try await connection.request(hints: .settingACondition) { client throws(ControlClientError) in
            do throws(ControlClientError) {
                return try await client.activate(
                    selection.profile, definition: selection.definition, replaceForeign: replaceForeign, for: duration, force: force,
                    condition: target.condition
                )
            } catch {
                throw selection.explain(error)
            }
        }
        try await output.show(status) { Format.status($0) }
    }
}

struct Off: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a condition's shaping; the interface is left as it was before. --all: every condition."
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Flag(help: "Switch off every condition, on every interface.") var all = false
    @Flag(help: "End a lease another client holds.") var force = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if all && target.condition != nil {
            throw ValidationError("give --interface or --all, not both")
        }
    }

    func run() async throws {
        if all {
            let list = try await connection.request(hints: .switchingOff) { client throws(ControlClientError) in
                try await client.deactivateAll(force: force)
            }
            return try await output.show(list) { Format.conditions($0) }
        }
        let status = try await connection.request(hints: .switchingOff) { client throws(ControlClientError) in
            try await client.deactivate(force: force, condition: target.condition)
        }
        try await output.show(status) { Format.status($0) }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every condition in force: on which interface, which profile, since when, who holds it, what it carried and dropped.",
        discussion: """
            --json prints the default condition's document (GET /v1/status), or with --interface             that interface's; --all --json prints every condition (GET /v1/conditions). The traffic             line counts what each direction carried, dropped (by the profile's loss or a full             queue) and holds queued now, from the kernel's counters (GET /v1/stats).
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Flag(help: "With --json: every condition, not only the default one.") var all = false
    @Flag(name: [.short, .long], help: "Also show linkcond's qdiscs and classes in the kernel, with their counters.") var verbose = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if all && target.condition != nil {
            throw ValidationError("give --interface or --all, not both")
        }
    }

    func run() async throws {
        let client = connection.client
        // The counters are a second read; a daemon too old to serve them shows none.
        guard target.condition == nil && (all || !output.json) else {
            let status = try await connection.request { client throws(ControlClientError) in
                try await client.status(verbose: verbose, condition: target.condition)
            }
            return try await output.show(status) { status in
                let traffic = status.active ? try? await client.stats().conditions.first { $0.id == status.id } : nil
                return Format.status(status, traffic: traffic, verbose: verbose)
            }
        }
        let list = try await connection.request { client throws(ControlClientError) in try await client.conditions(verbose: verbose) }
        try await output.show(list) { list in
            let stats = list.conditions.contains(where: \.active) ? try? await client.stats() : nil
            return Format.conditions(list, stats: stats, verbose: verbose)
        }
    }
}

struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Re-read the profile directories; a changed active profile is applied in place.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let reload = try await connection.request { client throws(ControlClientError) in try await client.reload() }
        try await output.show(reload) { reload in
            (["\(reload.profiles) profiles loaded" + (reload.reapplied ? "; the active condition was updated" : "")]
                + reload.problems.map { "skipped \($0)" }).joined(separator: "\n")
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the last changes of condition: when, what, who and why.")

    @OptionGroup var connection: ConnectionOptions
    @Option(name: [.customShort("n"), .long], help: "How many changes to show.") var count = 20
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let history = try await connection.request { client throws(ControlClientError) in try await client.history(limit: count) }
        try await output.show(history) { history in
            history.entries.isEmpty ? "no changes yet" : history.entries.map(Format.historyLine).joined(separator: "\n")
        }
    }
}

/// Checks a `--for` value before anything is sent.
func validateDuration(_ text: String?) throws {
    do {
        _ = try LeaseDuration.parse(text)
    } catch {
        throw ValidationError("--for \(error)")
    }
}

struct Release: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End your own lease early (one set with 'activate --for'); the condition from before it comes back."
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let status = try await connection.request(hints: .releasing) { client throws(ControlClientError) in
            try await client.releaseLease(condition: target.condition)
        }
        try await output.show(status) { Format.status($0) }
    }
}
