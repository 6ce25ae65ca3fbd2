import ArgumentParser
@testable import linkcond
import Testing

@Suite("linkcond's command line")
struct ArgumentTests {
    @Test("--socket may stand before or after the subcommand", arguments: [
        ["--socket", "/tmp/s", "activate", "Slow Net"],
        ["activate", "Slow Net", "--socket", "/tmp/s"],
        ["activate", "--socket", "/tmp/s", "Slow Net"],
    ])
    func socketPlacement(arguments: [String]) throws {
        let command = try #require(try LinkCond.parseAsRoot(arguments) as? Activate)
        #expect(command.connection.socket == "/tmp/s")
        #expect(command.name == "Slow Net")
    }

    @Test("Without --socket, the default path is used")
    func defaultSocket() throws {
        let command = try #require(try LinkCond.parseAsRoot(["status", "--json"]) as? Status)
        #expect(command.connection.socket == nil)
        #expect(command.json)
    }

    @Test("The environment sets the socket when --socket is absent, and --socket wins over it")
    func environment() throws {
        let fromEnvironment = ConnectionOptions.resolve(socket: nil, environment: ["LINKCOND_SOCKET": "/tmp/env.sock"])
        #expect(fromEnvironment == "/tmp/env.sock")
        #expect(ConnectionOptions.resolve(socket: "/tmp/flag.sock", environment: ["LINKCOND_SOCKET": "/tmp/env.sock"]) == "/tmp/flag.sock")
        #expect(ConnectionOptions.resolve(socket: nil, environment: [:]) == "/run/linkcond/control.sock")
        #expect(ConnectionOptions.resolve(socket: nil, environment: ["LINKCOND_SOCKET": ""]) == "/run/linkcond/control.sock")
    }

    @Test("activate --replace-foreign parses")
    func replaceForeign() throws {
        let command = try #require(try LinkCond.parseAsRoot(["activate", "black-hole", "--replace-foreign"]) as? Activate)
        #expect(command.replaceForeign)
    }

    @Test("Every subcommand is reachable by its name", arguments: [
        ("list", List.self), ("show", Show.self), ("activate", Activate.self), ("off", Off.self), ("status", Status.self),
        ("history", History.self), ("reload", Reload.self), ("release", Release.self),
    ] as [(String, any ParsableCommand.Type)])
    func subcommands(name: String, type: any ParsableCommand.Type) throws {
        let arguments = ["show", "activate"].contains(name) ? [name, "x"] : [name]
        let command = try LinkCond.parseAsRoot(arguments)
        #expect(Swift.type(of: command) == type)
    }

    @Test("run takes the command after --, keeping its own options")
    func runCommand() throws {
        let command = try #require(try LinkCond.parseAsRoot(["run", "--profile", "Slow Net", "--", "npm", "test", "--", "-v"]) as? Run)
        #expect(command.profile == "Slow Net")
        #expect(command.arguments == ["npm", "test", "--", "-v"])
        #expect(throws: (any Error).self) { try LinkCond.parseAsRoot(["run", "--profile", "Slow Net"]) }
    }
}
