import ControlAPI
@testable import linkcond
import Testing

@Suite("watch: what it draws")
struct WatchViewTests {
    static func status(_ id: String, _ profile: String?, lease: LeaseDocument? = nil) -> StatusResponse {
        StatusResponse(
            id: id, isDefault: id == "eth0", interface: "eth0", ifb: "lc-eth0", active: profile != nil,
            profile: profile.map {
                ProfileDocument(
                    name: $0, description: "", file: "", downlink: .init(bandwidth: nil, delay: "0ms", jitter: "0ms", loss: "0%"),
                    uplink: .init(bandwidth: nil, delay: "0ms", jitter: "0ms", loss: "0%"), dnsDelay: "0ms", summary: ""
                )
            },
            since: "2026-11-25T10:00:00Z", exemptions: ["tcp/22"], lease: lease
        )
    }

    static func stats(_ downRate: Double?, dropped: UInt64 = 0) -> StatsResponse {
        StatsResponse(at: "2026-11-25T10:00:05Z", conditions: [
            ConditionStatsDocument(
                id: "eth0", profile: "Slow Net",
                uplink: DirectionStatsDocument(bytes: 100, packets: 2, queuedPackets: 0, queuedBytes: 0),
                downlink: DirectionStatsDocument(
                    bytes: 9000, packets: 10, droppedByLoss: dropped, queuedPackets: 3, queuedBytes: 4500,
                    bitsPerSecond: downRate, droppedPerSecond: downRate == nil ? nil : Double(dropped)
                )
            ),
        ])
    }

    @Test("Rates in the largest whole unit with one decimal at most; a dash before the first")
    func rates() {
        #expect(WatchView.rate(nil) == "-")
        #expect(WatchView.rate(850.4) == "850 bit/s")
        #expect(WatchView.rate(31_234) == "31.2 kbit/s")
        #expect(WatchView.rate(1_500_000) == "1.5 Mbit/s")
        #expect(WatchView.rate(2_000_000_000) == "2 Gbit/s")
    }

    @Test("A sparkline scales to the largest rate it shows, and is flat when there was none")
    func sparkline() {
        #expect(WatchView.sparkline([0, 16_000, 32_000]) == "▁▅█")
        #expect(WatchView.sparkline([0, 0]) == "▁▁")
        #expect(WatchView.sparkline([]) == "")
    }

    @Test("The view keeps the last 30 rates of each direction and forgets conditions that are gone")
    func history() {
        var view = WatchView()
        for rate in 1...40 { view.record(Self.stats(Double(rate) * 1000)) }
        #expect(view.rates["down eth0"]?.count == 30)
        #expect(view.rates["down eth0"]?.last == 40_000)
        #expect(view.rates["up eth0"] == Array(repeating: 0, count: 30))
        view.record(StatsResponse(at: "2026-11-25T10:00:06Z", conditions: []))
        #expect(view.rates.isEmpty)
    }

    @Test("A frame: each active condition with its lease, then per direction its rates, drops and queue")
    func frame() {
        var view = WatchView()
        view.record(Self.stats(nil))
        view.record(Self.stats(32_000, dropped: 7))
        let holder = Holder(uid: 0, user: "root", pid: 42, command: "pytest")
        let conditions = ConditionListResponse(conditions: [
            Self.status("eth0", "Slow Net", lease: LeaseDocument(profile: "Slow Net", holder: holder, kind: .timed, expires: nil, secondsLeft: 25, restores: "off")),
            Self.status("eth1", nil),
        ])
        let lines = view.frame(conditions, Self.stats(32_000, dropped: 7)).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[0] == "linkcond watch  2026-11-25T10:00:05Z  (Ctrl-C quits)")
        #expect(lines[2] == "eth0: Slow Net, lease 25s left")
        #expect(lines[3].hasPrefix("  down ▁█"))
        #expect(lines[3].hasSuffix("32 kbit/s    7 dropped (7/s; 7 loss, 0 queue full), 3 queued (4500 bytes)"))
        #expect(lines[4].hasPrefix("  up   ▁▁"))
        #expect(lines.count == 5, "the condition that is off is not shown")
        #expect(view.plainLines(conditions, Self.stats(32_000, dropped: 7)) == [
            "2026-11-25T10:00:05Z eth0 Slow Net lease 25s; down 32 kbit/s 9000 bytes 7 dropped 7 loss 0 queue-full 3 queued; up - 100 bytes 0 dropped 0 loss 0 queue-full 0 queued",
        ])
        #expect(view.plainLines(ConditionListResponse(conditions: [Self.status("eth0", nil)]), Self.stats(nil)) == [
            "2026-11-25T10:00:05Z no condition in force",
        ])
    }
}
