import ArgumentParser
import ControlAPI
import LinkCondClient

/// `linkcond profile save|delete`: the operator's own profiles, kept by the daemon as YAML files
/// in its profile directory (`/etc/linkcond/profiles`), beside the read-only built-ins.
struct ProfileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Save or delete your own profiles in the daemon's profile directory.",
        subcommands: [SaveProfile.self, DeleteProfile.self]
    )
}

struct SaveProfile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save",
        abstract: "Save a profile file in the daemon's profile directory; its name: field names it.",
        discussion: """
            The daemon checks the file as it checks every profile (an error names the line and the \
            field), writes it to its profile directory and loads it: linkcond list shows it, and a \
            condition in force under a replaced profile takes its new values. Built-in profiles are \
            read-only; save a copy under another name.
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The profile file (YAML, as in profiles/).") var file: String
    @Flag(help: "Replace a saved profile of the same name.") var replace = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let definition = try ProfileSelection.definition(fromFile: file)
        let saved = try await connection.request { client throws(ControlClientError) in
            try await client.saveProfile(definition, replace: replace)
        }
        try await output.show(saved) { "saved '\($0.name)' in \($0.file): \($0.summary)" }
    }
}

struct DeleteProfile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a saved profile; conditions in force under it keep its values."
    )

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Display name or file name of the profile.") var name: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let deleted = try await connection.request { client throws(ControlClientError) in try await client.deleteProfile(named: name) }
        try await output.show(deleted) { "deleted '\($0.name)' (\($0.file))" }
    }
}
