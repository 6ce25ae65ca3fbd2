import ControlAPI
import Foundation
import LinkCondClient
@testable import linkcond
import Pcapng
import Testing

@Suite("run: the summary when the command ends")
struct RunSummaryTests {
    /// Each direction's bytes, packets, drops by loss and drops by a full queue.
    static func counters(_ id: String, down: (UInt64, UInt64, UInt64, UInt64), up: (UInt64, UInt64, UInt64, UInt64)) -> ConditionStatsDocument {
        func direction(_ counts: (UInt64, UInt64, UInt64, UInt64)) -> DirectionStatsDocument {
            DirectionStatsDocument(
                bytes: counts.0, packets: counts.1, droppedByLoss: counts.2, droppedByQueue: counts.3,
                queuedPackets: 0, queuedBytes: 0
            )
        }
        return ConditionStatsDocument(id: id, profile: "Slow Net", uplink: direction(up), downlink: direction(down))
    }

    static func released(_ id: String) -> LeaseOutcome {
        .ended(LeaseEvent(event: .ended, reason: .released, status: StatusResponse(
            id: id, isDefault: true, interface: "eth0", ifb: "lc-eth0", active: false, profile: nil,
            since: "2026-11-25T10:00:00Z", exemptions: []
        )))
    }

    @Test("What each direction carried and dropped while the command ran: the counters' growth")
    func growth() {
        let summary = RunSummary(
            condition: "eth0", profile: "Slow Net", seconds: 12.34, exitStatus: 0, ended: Self.released("eth0"),
            before: Self.counters("eth0", down: (1000, 10, 1, 0), up: (500, 5, 0, 0)),
            after: Self.counters("eth0", down: (5000, 40, 2, 1), up: (900, 9, 0, 2))
        )
        #expect(summary.downlink == RunSummary.Direction(bytes: 4000, packets: 30, droppedPackets: 2, droppedByLoss: 1, droppedByQueue: 1))
        #expect(summary.uplink == RunSummary.Direction(bytes: 400, packets: 4, droppedPackets: 2, droppedByLoss: 0, droppedByQueue: 2))
        #expect(summary.line == "Slow Net on eth0 for 12.3 s: down 4000 bytes, 30 packets, 2 dropped (1 by loss, 1 by a full queue); up 400 bytes, 4 packets, 2 dropped (0 by loss, 2 by a full queue)")
        #expect(summary.ended == "released")
    }

    @Test("Counters that went down were made anew meanwhile and count from zero; unread ones are left out")
    func freshOrUnread() {
        let summary = RunSummary(
            condition: "pid/42/eth0", profile: "Black Hole", seconds: 0.96, exitStatus: 7, ended: .connectionLost("gone"),
            before: Self.counters("pid/42/eth0", down: (9000, 90, 0, 0), up: (0, 0, 0, 0)),
            after: Self.counters("pid/42/eth0", down: (300, 3, 1, 0), up: (0, 0, 4, 0))
        )
        #expect(summary.downlink == RunSummary.Direction(bytes: 300, packets: 3, droppedPackets: 1, droppedByLoss: 1, droppedByQueue: 0))
        #expect(summary.line == "Black Hole on pid/42/eth0 for 1.0 s (it ended early: connection-lost): down 300 bytes, 3 packets, 1 dropped (1 by loss, 0 by a full queue); up 0 bytes, 0 packets, 4 dropped (4 by loss, 0 by a full queue)")
        let unread = RunSummary(
            condition: "eth0", profile: "Slow Net", seconds: 2, exitStatus: 0, ended: Self.released("eth0"),
            before: nil, after: Self.counters("eth0", down: (1, 1, 0, 0), up: (1, 1, 0, 0))
        )
        #expect(unread.line == "Slow Net on eth0 for 2.0 s")
        #expect(unread.downlink == nil)
    }

    @Test("Under a scenario: the scenario's name and each step's time in force, in the list's order")
    func scenarioSteps() {
        let scenario = ScenarioStatusDocument(
            name: "Slow Net, then Black Hole", file: "slow-then-black-hole.yaml", seed: 1, step: 2, steps: 2, stepName: "Black Hole",
            round: 1, stepSince: "2026-11-25T10:00:03Z", secondsInStep: 9.04, endsBy: "nothing: the last step lasts until the condition changes",
            timeInSteps: [StepTimeDocument(step: 1, name: "Slow Net", seconds: 3.06), StepTimeDocument(step: 2, name: "Black Hole", seconds: 9.04)]
        )
        let summary = RunSummary(
            condition: "eth0", profile: "Slow Net", seconds: 12.1, exitStatus: 0, ended: Self.released("eth0"),
            before: nil, after: nil, scenario: scenario
        )
        #expect(summary.scenario == "Slow Net, then Black Hole")
        #expect(summary.steps == [StepTimeDocument(step: 1, name: "Slow Net", seconds: 3.06), StepTimeDocument(step: 2, name: "Black Hole", seconds: 9.04)])
        #expect(summary.line == "scenario 'Slow Net, then Black Hole' on eth0 for 12.1 s (1. Slow Net 3.1 s, 2. Black Hole 9.0 s)")
    }

    @Test("With --capture: a line per peer the command talked to, a warning per plaintext request, in the JSON too")
    func traceLines() throws {
        let summary = try JSONDecoder().decode(TraceSummary.self, from: Data("""
            {"peers": [{"address": "93.184.216.34", "names": ["example.com"], "services": ["tcp/80", "tcp/443"],
                        "bytesOut": 900, "bytesIn": 12000, "packetsOut": 9, "packetsIn": 11, "retransmissions": 1, "resets": 0},
                       {"address": "10.254.0.1", "names": [], "services": ["udp/53"],
                        "bytesOut": 80, "bytesIn": 120, "packetsOut": 1, "packetsIn": 1, "retransmissions": 0, "resets": 0}],
             "plaintextHTTP": [{"method": "GET", "host": "example.com", "path": "/login", "peer": "93.184.216.34"}],
             "unreadable": 0}
            """.utf8))
        let trace = RunSummary.Trace(file: "out.pcapng", summary: summary, wholeTrace: true)
        #expect(trace.lines == [
            "talked to 93.184.216.34 (example.com), tcp/80 tcp/443: sent 900 bytes in 9 packets, received 12000 bytes in 11 packets; 1 TCP retransmission, 0 resets",
            "talked to 10.254.0.1, udp/53: sent 80 bytes in 1 packet, received 120 bytes in 1 packet",
            "warning: plaintext HTTP: GET http://example.com/login (to 93.184.216.34): anyone on the path can read and change it",
        ])
        let json = String(decoding: try JSONEncoder().encode(trace), as: UTF8.self)
        #expect(json.contains(#""plaintextHTTP":[{"#) && json.contains(#""wholeTrace":true"#))
    }

    @Test("A trace that cannot be read back gives no summary, and says why")
    func unreadableTrace() {
        guard case .failure(let stdout) = RunSummary.Trace.read("-") else { Issue.record("read standard output"); return }
        #expect(stdout.description == "it went to standard output")
        guard case .failure(let missing) = RunSummary.Trace.read("/nonexistent/trace.pcapng") else { Issue.record("read a missing file"); return }
        #expect(missing.description.contains("No such file"))
        // A pipe is refused at once, not waited on for a writer.
        let fifo = "/tmp/lc-test-\(getpid())-trace.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        guard case .failure(let pipe) = RunSummary.Trace.read(fifo) else { Issue.record("read a FIFO"); return }
        #expect(pipe.description == "it is not a regular file")
    }
}
