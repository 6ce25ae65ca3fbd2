import ArgumentParser
import LinkCondClient
import Foundation

/// Switches profiles many times while probe.py streams packets, and records when each switch
/// began and ended on the clock the packets are stamped with.
struct Hitless: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Switch between profiles at random intervals, logging each switch's start and end."
    )

    struct Switch: Codable {
        var profile: String
        var startNanoseconds: Int64
        var endNanoseconds: Int64
    }

    @Option(help: "linkcondd's control socket.") var socket: String
    @Option(name: .customLong("profile"), help: "Profiles to switch between; repeat.") var profiles: [String]
    @Option(help: "Number of switches.") var switches = 200
    @Option(help: "Shortest time between switches, seconds.") var minDwell = 0.2
    @Option(help: "Longest time between switches, seconds.") var maxDwell = 0.8
    @Option(help: "Write the switch log here as JSON.") var out: String

    func run() async throws {
        let (switches, profiles, minDwell, maxDwell) = (self.switches, self.profiles, self.minDwell, self.maxDwell)
        let log = try await ControlClient(socketPath: socket).withConnection { connection in
            var generator = SystemRandomNumberGenerator()
            var log: [Switch] = []
            var current = ""
            for _ in 0..<switches {
                var next = profiles.randomElement(using: &generator)!
                while next == current && profiles.count > 1 { next = profiles.randomElement(using: &generator)! }
                let start = monotonicNanoseconds()
                try await connection.activate(next)
                log.append(Switch(profile: next, startNanoseconds: start, endNanoseconds: monotonicNanoseconds()))
                current = next
                try await Task.sleep(for: .seconds(Double.random(in: minDwell...maxDwell, using: &generator)))
            }
            return log
        }
        try JSONEncoder().encode(log).write(to: URL(fileURLWithPath: out))
        print("hitless: \(log.count) switches between \(profiles.count) profiles")
    }
}
