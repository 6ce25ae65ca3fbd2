import ArgumentParser
import LinkCondClient
import Foundation

/// Time from the request to the reply, with the kernel state applied, over one connection.
struct SwitchLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch-latency",
        abstract: "Switch linkcondd between profiles and time each request until its reply."
    )

    @Option(help: "linkcondd's control socket.") var socket: String
    @Option(name: .customLong("profile"), help: "Profiles to cycle through, in order; repeat.") var profiles: [String]
    @Option(help: "Number of switches.") var count = 500
    @Option(help: "The condition to switch (eth0@10.0.0.5, @10.0.0.5); the default one without.") var condition: String?
    @Option(help: "Write the summary and samples here as JSON.") var out: String?

    func run() async throws {
        let (profiles, count, condition) = (self.profiles, self.count, self.condition)
        let samples = try await ControlClient(socketPath: socket).withConnection { connection in
            // Start from the last profile, so the first measured switch is a real change.
            try await connection.activate(profiles[profiles.count - 1], condition: condition)
            var samples: [Int64] = []
            samples.reserveCapacity(count)
            for index in 0..<count {
                let start = monotonicNanoseconds()
                try await connection.activate(profiles[index % profiles.count], condition: condition)
                samples.append(monotonicNanoseconds() - start)
            }
            return samples
        }
        try report(LatencySummary(method: "linkcond", nanoseconds: samples), to: out)
    }
}

/// Runs a command per switch (a tc script, tcconfig's tcset) and times each run.
struct SwitchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch-command",
        abstract: "Time a shell command that switches profiles; {} in the command is the profile's file name."
    )

    @Option(help: "Name for the report.") var method: String
    @Option(name: .customLong("profile"), help: "Profile file names to cycle through; repeat.") var profiles: [String]
    @Option(help: "Number of switches.") var count = 100
    @Option(help: "Write the summary and samples here as JSON.") var out: String?
    @Argument(help: "The command, run with /bin/sh -c.") var command: String

    func run() async throws {
        _ = try runShell(command.replacingOccurrences(of: "{}", with: profiles[profiles.count - 1]))
        var samples: [Int64] = []
        var failures = 0
        for index in 0..<count {
            let line = command.replacingOccurrences(of: "{}", with: profiles[index % profiles.count])
            let start = monotonicNanoseconds()
            let status = try runShell(line)
            samples.append(monotonicNanoseconds() - start)
            if status != 0 {
                failures += 1
                print("\(method): '\(line)' exited \(status)")
            }
        }
        var summary = LatencySummary(method: method, nanoseconds: samples)
        summary.failures = failures
        try report(summary, to: out)
    }
}

/// Runs `line` with /bin/sh and returns its exit status; a tool that fails a switch still took
/// the time it took, and the report counts the failure.
func runShell(_ line: String) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", line]
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

func report<Value: Encodable>(_ value: Value, to path: String?) throws {
    if let summary = value as? LatencySummary {
        print(summary.line)
    }
    guard let path else { return }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    try encoder.encode(value).write(to: URL(fileURLWithPath: path))
}
