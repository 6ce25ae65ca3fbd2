import ArgumentParser
import ControlAPI
import LinkCondClient

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the profiles linkcondd knows; * marks the active one.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let listing = try await withDaemon { () async throws(ControlClientError) in try await client.profiles() }
        if json {
            return try printJSON(listing)
        }
        let status = try await withDaemon { () async throws(ControlClientError) in try await client.status() }
        print(Format.profileTable(listing.profiles, active: status.profile?.name))
        for problem in listing.problems {
            print("skipped \(problem)")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one profile's values.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Display name or file name of the profile.") var name: String
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let profile = try await withDaemon { () async throws(ControlClientError) in try await client.profile(named: name) }
        if json {
            return try printJSON(profile)
        }
        print(Format.profile(profile))
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
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func validate() throws {
        try validateDuration(duration)
        _ = try ProfileSelection.resolve(argument: name, options: condition, commandName: "linkcond activate")
    }

    func run() async throws {
        let client = connection.client
        let selection = try ProfileSelection.resolve(argument: name, options: condition, commandName: "linkcond activate")
        let status = try await withDaemon { () async throws(ControlClientError) in
            do throws(ControlClientError) {
                return try await client.activate(
                    selection.profile, definition: selection.definition, replaceForeign: replaceForeign, for: duration, force: force,
                    condition: target.condition
                )
            } catch {
                throw selection.explain(error)
            }
        }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
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
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func validate() throws {
        if all && target.condition != nil {
            throw ValidationError("give --interface or --all, not both")
        }
    }

    func run() async throws {
        let client = connection.client
        if all {
            let list = try await withDaemon { () async throws(ControlClientError) in try await client.deactivateAll(force: force) }
            return json ? try printJSON(list) : print(Format.conditions(list))
        }
        let status = try await withDaemon { () async throws(ControlClientError) in
            try await client.deactivate(force: force, condition: target.condition)
        }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
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
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func validate() throws {
        if all && target.condition != nil {
            throw ValidationError("give --interface or --all, not both")
        }
    }

    func run() async throws {
        let client = connection.client
        guard target.condition == nil && (all || !json) else {
            let status = try await withDaemon { () async throws(ControlClientError) in
                try await client.status(verbose: verbose, condition: target.condition)
            }
            if json {
                return try printJSON(status)
            }
            let traffic = status.active ? try? await client.stats().conditions.first { $0.id == status.id } : nil
            return print(Format.status(status, traffic: traffic, verbose: verbose))
        }
        let list = try await withDaemon { () async throws(ControlClientError) in try await client.conditions(verbose: verbose) }
        if json {
            return try printJSON(list)
        }
        // The counters are a second read; a daemon too old to serve them shows none.
        let stats = list.conditions.contains(where: \.active) ? try? await client.stats() : nil
        print(Format.conditions(list, stats: stats, verbose: verbose))
    }
}

struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Re-read the profile directories; a changed active profile is applied in place.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let reload = try await withDaemon { () async throws(ControlClientError) in try await client.reload() }
        if json {
            return try printJSON(reload)
        }
        print("\(reload.profiles) profiles loaded" + (reload.reapplied ? "; the active condition was updated" : ""))
        for problem in reload.problems {
            print("skipped \(problem)")
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the last changes of condition: when, what, who and why.")

    @OptionGroup var connection: ConnectionOptions
    @Option(name: [.customShort("n"), .long], help: "How many changes to show.") var count = 20
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let history = try await withDaemon { () async throws(ControlClientError) in try await client.history(limit: count) }
        if json {
            return try printJSON(history)
        }
        print(history.entries.isEmpty ? "no changes yet" : history.entries.map(Format.historyLine).joined(separator: "\n"))
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
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let status = try await withDaemon { () async throws(ControlClientError) in try await client.releaseLease(condition: target.condition) }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
    }
}
