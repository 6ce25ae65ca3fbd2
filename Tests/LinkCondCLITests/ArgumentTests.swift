import ArgumentParser
import Foundation
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
        #expect(command.output.json)
    }

    @Test("The environment sets the socket when --socket is absent, and --socket wins over it")
    func environment() throws {
        let fromEnvironment = ConnectionOptions.resolve(socket: nil, environment: ["LINKCOND_SOCKET": "/tmp/env.sock"])
        #expect(fromEnvironment == "/tmp/env.sock")
        #expect(ConnectionOptions.resolve(socket: "/tmp/flag.sock", environment: ["LINKCOND_SOCKET": "/tmp/env.sock"]) == "/tmp/flag.sock")
        #expect(ConnectionOptions.resolve(socket: nil, environment: [:]) == "/run/linkcond/control.sock")
        #expect(ConnectionOptions.resolve(socket: nil, environment: ["LINKCOND_SOCKET": ""]) == "/run/linkcond/control.sock")
    }

    @Test("--netns and --pid name a condition inside that namespace", arguments: [
        (["activate", "Slow Net", "--interface", "eth0", "--pid", "4242"], "pid/4242/eth0"),
        (["off", "--netns", "ci-1", "--interface", "veth1"], "netns/ci-1/veth1"),
        (["activate", "Slow Net", "--pid", "4242"], "pid/4242/"),
        (["off", "--netns", "ci-1", "--to", "10.0.0.5:443"], "netns/ci-1/@10.0.0.5:443"),
        (["status", "--interface", "eth1"], "eth1"),
        (["activate", "Slow Net", "--to", "API.example.com:443"], "@api.example.com:443"),
        (["off", "--interface", "eth0", "--to", "cdn.example.net"], "eth0@cdn.example.net"),
    ])
    func namespaceTargets(arguments: [String], condition: String) throws {
        let command = try LinkCond.parseAsRoot(arguments)
        let target = (command as? Activate)?.target ?? (command as? Off)?.target ?? (command as? Status)?.target
        #expect(target?.condition == condition)
    }

    @Test("Two namespaces, or a namespace or peer that cannot be, is refused before anything is sent", arguments: [
        ["activate", "Slow Net", "--pid", "0", "--interface", "eth0"],
        ["off", "--netns", "a", "--pid", "1", "--interface", "eth0"], ["off", "--netns", "a/b", "--interface", "eth0"],
        ["activate", "Slow Net", "--to", "api_example.com"], ["activate", "Slow Net", "--device", "phone.lan"],
    ])
    func namespaceRefusals(arguments: [String]) {
        #expect(throws: (any Error).self) { try LinkCond.parseAsRoot(arguments) }
    }

    @Test("run --help prints run's help, where no command follows --", arguments: [
        ["run", "--help"], ["run", "-h"], ["run", "--profile", "Slow Net", "--help"],
    ])
    func runHelp(arguments: [String]) {
        do {
            _ = try LinkCond.parseAsRoot(arguments)
            Issue.record("\(arguments) parsed as a command to run")
        } catch {
            #expect(LinkCond.exitCode(for: error) == .success)
            #expect(LinkCond.fullMessage(for: error).contains("Run a command under a profile"))
        }
    }

    @Test("run -- CMD --help passes --help to the command")
    func runPassesHelpOn() throws {
        let command = try #require(try LinkCond.parseAsRoot(["run", "--profile", "Slow Net", "--", "curl", "--help"]) as? Run)
        #expect(command.arguments == ["curl", "--help"])
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

@Suite("Conditions given as options")
struct ConditionOptionTests {
    @Test("Options become a profile: shared values for both directions, per-direction ones win")
    func definition() throws {
        let command = try #require(try LinkCond.parseAsRoot(["activate", "--rate", "1Mbit", "--delay", "100ms", "--up-loss", "5%", "--dns-delay", "1s"]) as? Activate)
        let yaml = command.condition.definition.yaml
        #expect(yaml.contains("downlink:\n  bandwidth: \"1Mbit\"\n  delay: \"100ms\"\n"))
        #expect(yaml.contains("uplink:\n  bandwidth: \"1Mbit\"\n  delay: \"100ms\"\n  loss: \"5%\"\n"))
        #expect(yaml.contains("dns:\n  delay: \"1s\"\n"))
        #expect(command.condition.option(for: "uplink.loss") == "--up-loss")
        #expect(command.condition.option(for: "downlink.bandwidth") == "--rate")
    }

    @Test("--dns-failure and its names become the profile's dns: section; names alone are refused")
    func dnsFailure() throws {
        let command = try #require(try LinkCond.parseAsRoot(["activate", "--dns-failure", "nxdomain", "--dns-failure-for", "api.example.com", "--dns-failure-for", "*.cdn.example.com"]) as? Activate)
        #expect(command.condition.definition.yaml.contains("dns:\n  failure: \"nxdomain\"\n  names: [\"api.example.com\", \"*.cdn.example.com\"]\n"))
        #expect(command.condition.option(for: "dns.failure") == "--dns-failure")
        #expect(throws: (any Error).self) { try LinkCond.parseAsRoot(["activate", "--dns-failure-for", "api.example.com"]) }
    }

    @Test("A value cannot break out of its field")
    func quoting() throws {
        let command = try #require(try LinkCond.parseAsRoot(["activate", "--rate", "1Mbit\"\nname: evil"]) as? Activate)
        #expect(command.condition.definition.yaml.contains(#"bandwidth: "1Mbit\"\nname: evil""#))
    }

    @Test("A profile and options together, or neither, is refused before anything is sent")
    func exactlyOne() {
        #expect(throws: (any Error).self) { try LinkCond.parseAsRoot(["activate", "Slow Net", "--rate", "1Mbit"]) }
        #expect(throws: (any Error).self) { try LinkCond.parseAsRoot(["activate"]) }
    }

    @Test("Mistyped commands get a suggestion only when one is close; a bare linkcond gets usage")
    func usage() {
        #expect(LinkCond.usageProblem(["actvate", "x"])?.contains("did you mean 'activate'") == true)
        #expect(LinkCond.usageProblem(["--socket", "/s", "stauts"])?.contains("did you mean 'status'") == true)
        #expect(LinkCond.usageProblem(["zzzzzz"])?.contains("did you mean") == false)
        #expect(LinkCond.usageProblem([])?.contains("usage: linkcond") == true)
        #expect(LinkCond.usageProblem(["status"]) == nil)
        #expect(LinkCond.usageProblem(["--version"]) == nil)
    }
}

@Suite("doctor")
struct DoctorTests {
    /// A fake root with the files doctor reads.
    func root(config: String?, modulesDep: String, loaded: [String], ubuntu: Bool = false) throws -> String {
        let root = "/tmp/lc-doctor-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/lib/modules/6.9.0/", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/proc/sys/kernel", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        try modulesDep.write(toFile: root + "/lib/modules/6.9.0/modules.dep", atomically: true, encoding: .utf8)
        if let config {
            try FileManager.default.createDirectory(atPath: root + "/boot", withIntermediateDirectories: true)
            try config.write(toFile: root + "/boot/config-6.9.0", atomically: true, encoding: .utf8)
        }
        for module in loaded {
            try FileManager.default.createDirectory(atPath: root + "/sys/module/\(module)", withIntermediateDirectories: true)
        }
        try (ubuntu ? "ID=ubuntu\n" : "ID=debian\n").write(toFile: root + "/etc/os-release", atomically: true, encoding: .utf8)
        return root
    }

    @Test("A kernel with netem as a module passes; one without fails, naming the fix for Ubuntu")
    func modules() throws {
        let dep = ["sch_netem", "sch_htb", "sch_ingress", "ifb", "cls_u32", "cls_flower", "act_mirred"]
            .map { "kernel/net/sched/\($0).ko.xz: kernel/net/core/x.ko.xz" }.joined(separator: "\n")
        let good = try root(config: nil, modulesDep: dep, loaded: ["sch_htb"])
        defer { try? FileManager.default.removeItem(atPath: good) }
        #expect(KernelModules.findings(release: "6.9.0", root: good).allSatisfy { $0.level == .ok })

        let config = "CONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_NETEM is not set\nCONFIG_NET_SCH_INGRESS=y\nCONFIG_IFB=y\nCONFIG_NET_CLS_U32=y\nCONFIG_NET_CLS_FLOWER=y\nCONFIG_NET_ACT_MIRRED=y\n"
        let bad = try root(config: config, modulesDep: "", loaded: [], ubuntu: true)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let findings = KernelModules.findings(release: "6.9.0", root: bad)
        let netem = try #require(findings.first { $0.topic == "kernel sch_netem" })
        #expect(netem.level == .fail)
        #expect(netem.message.contains("CONFIG_NET_SCH_NETEM is not set"))
        #expect(netem.fix?.contains("linux-modules-extra-6.9.0") == true)
        #expect(findings.filter { $0.level == .ok }.count == 6)
    }

    @Test("Socket destroy (linkcond reset): built in is ok; not set, or no configuration to read, a warning")
    func socketDestroy() throws {
        let with = try root(config: "CONFIG_INET_DIAG=y\nCONFIG_INET_DIAG_DESTROY=y\n", modulesDep: "", loaded: [])
        let without = try root(config: "CONFIG_INET_DIAG=y\n# CONFIG_INET_DIAG_DESTROY is not set\n", modulesDep: "", loaded: [])
        let unknown = try root(config: nil, modulesDep: "", loaded: [])
        defer { [with, without, unknown].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        #expect(KernelModules.socketDestroyFinding(release: "6.9.0", root: with).level == .ok)
        let missing = KernelModules.socketDestroyFinding(release: "6.9.0", root: without)
        #expect(missing.level == .warn && missing.message.contains("CONFIG_INET_DIAG_DESTROY is not set"))
        #expect(KernelModules.socketDestroyFinding(release: "6.9.0", root: unknown).level == .warn)
    }
}
