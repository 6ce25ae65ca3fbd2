import ArgumentParser
import ControlAPI
import ControlClient

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
    static let configuration = CommandConfiguration(abstract: "Put the interface into a profile's condition; switching from another profile is seamless.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Display name or file name of the profile.") var name: String
    @Flag(help: "Delete a qdisc on the interface that linkcond did not create, instead of refusing. It is not restored afterwards.")
    var replaceForeign = false
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let status = try await withDaemon { () async throws(ControlClientError) in
            try await client.activate(name, replaceForeign: replaceForeign)
        }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
    }
}

struct Off: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove all shaping; the interface is left as it was before.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let status = try await withDaemon { () async throws(ControlClientError) in try await client.deactivate() }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the condition in force, on which interface, since when.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    func run() async throws {
        let client = connection.client
        let status = try await withDaemon { () async throws(ControlClientError) in try await client.status() }
        if json {
            return try printJSON(status)
        }
        print(Format.status(status))
    }
}
