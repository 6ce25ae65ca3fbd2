import ControlAPI
import LinkCondClient

/// What `linkcond run` tells when its command has ended: how long the condition held, how it
/// ended, and what its shaping carried and dropped meanwhile, from the daemon's counters read
/// when the command started and when it ended.
struct RunSummary: Codable, Equatable {
    struct Direction: Codable, Equatable {
        var bytes: UInt64
        var packets: UInt64
        /// By the profile's loss and by a full queue, and the two apart.
        var droppedPackets: UInt64
        var droppedByLoss: UInt64
        var droppedByQueue: UInt64
    }

    /// The condition's id (`eth0`, `pid/4242/eth0` for a sandbox).
    var condition: String
    /// The profile in force when the command started (a scenario's first step).
    var profile: String
    /// Under `run --scenario`: the scenario, and each step's time in force.
    var scenario: String?
    var steps: [StepTimeDocument]?
    var seconds: Double
    /// The command's exit status, as `run` exits with it.
    var exitStatus: Int32
    /// How the condition's lease ended: `released` when the command did, or `expired`,
    /// `taken-over`, `shutdown`, `namespace-ended`, `connection-lost`.
    var ended: String
    /// `nil` when the counters could not be read at both ends.
    var downlink: Direction?
    var uplink: Direction?
    /// With `--capture`: what the trace says the command talked to.
    var trace: Trace?

    init(
        condition: String, profile: String, seconds: Double, exitStatus: Int32, ended: LeaseOutcome,
        before: ConditionStatsDocument?, after: ConditionStatsDocument?, scenario: ScenarioStatusDocument? = nil
    ) {
        self.condition = condition
        self.profile = profile
        self.scenario = scenario?.name
        steps = scenario?.timeInSteps
        self.seconds = seconds
        self.exitStatus = exitStatus
        switch ended {
        case .ended(let event): self.ended = event.reason?.rawValue ?? "ended"
        case .connectionLost: self.ended = "connection-lost"
        }
        downlink = Self.difference(before?.downlink, after?.downlink)
        uplink = Self.difference(before?.uplink, after?.uplink)
    }

    /// What a direction's counters grew by; counters that went down belong to objects made
    /// anew meanwhile, and count from zero.
    static func difference(_ before: DirectionStatsDocument?, _ after: DirectionStatsDocument?) -> Direction? {
        guard let before, let after else { return nil }
        let fresh = after.bytes < before.bytes || after.packets < before.packets
            || after.droppedByLoss < before.droppedByLoss || after.droppedByQueue < before.droppedByQueue
        func grown(_ counter: KeyPath<DirectionStatsDocument, UInt64>) -> UInt64 {
            after[keyPath: counter] - (fresh ? 0 : before[keyPath: counter])
        }
        return Direction(
            bytes: grown(\.bytes), packets: grown(\.packets),
            droppedPackets: grown(\.droppedByLoss) + grown(\.droppedByQueue),
            droppedByLoss: grown(\.droppedByLoss), droppedByQueue: grown(\.droppedByQueue)
        )
    }

    /// `Slow Net on eth0 for 12.3 s: down 1234 bytes, 10 packets, 2 dropped (2 by loss, 0 by a
    /// full queue); up …`, or under a
    /// scenario `scenario 'Subway' on eth0 for 40.0 s (1. Good Signal 30.0 s, 2. Tunnel 10.0 s): …`
    var line: String {
        var line = "\(scenario.map { "scenario '\($0)'" } ?? profile) on \(condition) for \(Self.tenths(seconds)) s"
        if let steps, !steps.isEmpty {
            line += " (" + steps.map { "\($0.step). \($0.name) \(Self.tenths($0.seconds)) s" }.joined(separator: ", ") + ")"
        }
        if ended != "released" { line += " (it ended early: \(ended))" }
        let directions = [("down", downlink), ("up", uplink)].compactMap { name, counters in
            counters.map { "\(name) \($0.bytes) bytes, \($0.packets) packets, \(Format.dropped($0.droppedPackets, loss: $0.droppedByLoss, queue: $0.droppedByQueue))" }
        }
        return directions.isEmpty ? line : line + ": " + directions.joined(separator: "; ")
    }

    private static func tenths(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
