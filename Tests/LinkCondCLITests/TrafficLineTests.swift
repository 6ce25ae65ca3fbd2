import ControlAPI
@testable import linkcond
import Testing

@Suite("status: the traffic line")
struct TrafficLineTests {
    @Test("What each direction carried, what it dropped and holds queued, after the profile")
    func trafficLine() {
        let status = StatusResponse(
            id: "eth0", isDefault: true, interface: "eth0", ifb: "lc-eth0", active: true,
            profile: ProfileDocument(
                name: "Slow Net", description: "", file: "slow-net.yaml",
                downlink: .init(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
                uplink: .init(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
                dnsDelay: "200ms", summary: "down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms"
            ),
            since: "2026-11-25T10:02:11Z", exemptions: ["tcp/22"]
        )
        let traffic = ConditionStatsDocument(
            id: "eth0", profile: "Slow Net",
            uplink: DirectionStatsDocument(bytes: 4_200, packets: 40, queuedPackets: 1, queuedBytes: 60),
            downlink: DirectionStatsDocument(
                bytes: 120_000, packets: 90, droppedByLoss: 5, droppedByQueue: 2, queuedPackets: 12, queuedBytes: 18_000, bitsPerSecond: 31_234
            )
        )
        let lines = Format.status(status, traffic: traffic).split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines[2] == "traffic: down 120000 bytes, 90 packets, 7 dropped (5 by loss, 2 by a full queue), 12 queued; up 4200 bytes, 40 packets, 0 dropped, 1 queued")
    }
}
