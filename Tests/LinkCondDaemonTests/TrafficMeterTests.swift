import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOHTTP1
import Netlink
import Shaping
import ShapingTestSupport
import Testing

@Suite("Traffic counters: GET /v1/stats and the rates between reads")
struct TrafficMeterTests {
    static func counters(bytes: UInt64, packets: UInt64, drops: UInt64 = 0, queued: UInt64 = 0) -> TrafficStatistics {
        TrafficStatistics(packets: packets, bytes: bytes, drops: drops, overlimits: 0, queuedPackets: queued, queuedBytes: queued * 1500)
    }

    static func reading(_ id: String, up: TrafficStatistics, down: TrafficStatistics) -> ConditionCounters {
        ConditionCounters(id: id, profile: "Slow Net", uplink: DirectionCounters(leaves: up, queueDrops: 0), downlink: DirectionCounters(leaves: down, queueDrops: 0))
    }

    @Test("A first read has counters and no rate; a second gives rates over the time between")
    func ratesBetweenReads() throws {
        let meter = TrafficMeter()
        let start = ContinuousClock.now
        let first = meter.documents([Self.reading("eth0", up: Self.counters(bytes: 1000, packets: 10), down: Self.counters(bytes: 0, packets: 0))], at: start)
        #expect(first.first?.uplink?.bytes == 1000)
        #expect(first.first?.uplink?.bitsPerSecond == nil)
        let second = meter.documents(
            [Self.reading("eth0", up: Self.counters(bytes: 5000, packets: 14, drops: 2), down: Self.counters(bytes: 8000, packets: 8, queued: 3))],
            at: start + .seconds(2)
        )
        let up = try #require(second.first?.uplink)
        let down = try #require(second.first?.downlink)
        #expect(up.bitsPerSecond == 16_000)
        #expect(up.packetsPerSecond == 2)
        #expect(up.droppedPerSecond == 1)
        #expect(down.bitsPerSecond == 32_000)
        #expect(down.queuedPackets == 3)
        #expect(down.queuedBytes == 4500)
    }

    @Test("No rate from counters that went down (objects made anew), from a read over a minute old, or for another condition")
    func noRateWithoutAComparableRead() {
        let meter = TrafficMeter()
        let start = ContinuousClock.now
        _ = meter.documents([Self.reading("eth0", up: Self.counters(bytes: 9000, packets: 9), down: Self.counters(bytes: 9000, packets: 9))], at: start)
        let reset = meter.documents([Self.reading("eth0", up: Self.counters(bytes: 100, packets: 1), down: Self.counters(bytes: 9100, packets: 10))], at: start + .seconds(1))
        #expect(reset.first?.uplink?.bitsPerSecond == nil)
        #expect(reset.first?.downlink?.bitsPerSecond == 800)
        let late = meter.documents([Self.reading("eth0", up: Self.counters(bytes: 200, packets: 2), down: Self.counters(bytes: 9200, packets: 11))], at: start + .seconds(62))
        #expect(late.first?.uplink?.bitsPerSecond == nil)
        let other = meter.documents([Self.reading("eth1", up: Self.counters(bytes: 300, packets: 3), down: Self.counters(bytes: 0, packets: 0))], at: start + .seconds(63))
        #expect(other.first?.uplink?.bitsPerSecond == nil)
        // eth0 was not read last time: it starts over.
        let again = meter.documents([Self.reading("eth0", up: Self.counters(bytes: 400, packets: 4), down: Self.counters(bytes: 9300, packets: 12))], at: start + .seconds(64))
        #expect(again.first?.uplink?.bitsPerSecond == nil)
    }

    @Test("GET /v1/stats: each active condition's own leaves, per direction; nothing for one that is off")
    func statsEndpoint() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer)
        func stats() async throws -> StatsResponse {
            let reply = await router.respond(to: ControlRequest(method: .GET, uri: "/v1/stats", body: [], requester: TestDaemon.bob))
            #expect(reply.status == HTTPResponseStatus.ok)
            return try JSONDecoder().decode(StatsResponse.self, from: Data(reply.body))
        }
        #expect(try await stats().conditions.isEmpty)
        let put = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/condition", body: Array(#"{"profile": "Slow Net"}"#.utf8), requester: TestDaemon.root))
        #expect(put.status == .ok)
        kernel.counters = [
            "eth0": [
                // netem's drops are its loss's and its queue's: 5 here, 3 of them the queue's.
                ReservedHandles.bulkLeaf: Self.counters(bytes: 3000, packets: 3, drops: 5),
                ReservedHandles.bulkQueue: Self.counters(bytes: 3000, packets: 3, drops: 3),
                ReservedHandles.dnsLeaf: Self.counters(bytes: 100, packets: 1, drops: 1),
                ReservedHandles.exemptLeaf: Self.counters(bytes: 99_999, packets: 99, drops: 50),
            ],
            "lc-eth0": [
                ReservedHandles.bulkLeaf: Self.counters(bytes: 6000, packets: 4, drops: 2, queued: 2),
                ReservedHandles.bulkQueue: Self.counters(bytes: 6000, packets: 4, drops: 2, queued: 1),
            ],
        ]
        let condition = try #require(try await stats().conditions.first)
        #expect(condition.id == "eth0")
        #expect(condition.profile == "Slow Net")
        #expect(condition.uplink == DirectionStatsDocument(
            bytes: 3100, packets: 4, droppedByLoss: 3, droppedByQueue: 3, queuedPackets: 0, queuedBytes: 0
        ))
        #expect(condition.uplink?.droppedPackets == 6, "netem's own drops, both leaves'")
        #expect(condition.downlink == DirectionStatsDocument(
            bytes: 6000, packets: 4, droppedByLoss: 0, droppedByQueue: 2, queuedPackets: 2, queuedBytes: 3000
        ))
        #expect(condition.downlink?.droppedPackets == 2)
        let post = await router.respond(to: ControlRequest(method: .POST, uri: "/v1/stats", body: [], requester: TestDaemon.root))
        #expect(post.status == .methodNotAllowed)
    }

    @Test("A peer's condition counts its own leaf, and the whole interface's its own, from one survey")
    func peerCounters() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer)
        for (uri, profile) in [("/v1/conditions/eth0%4010.0.0.5", "Nasty Net"), ("/v1/condition", "Slow Net")] {
            let reply = await router.respond(to: ControlRequest(method: .PUT, uri: uri, body: Array("{\"profile\": \"\(profile)\"}".utf8), requester: TestDaemon.root))
            #expect(reply.status == HTTPResponseStatus.ok, "\(uri): \(String(decoding: reply.body, as: UTF8.self))")
        }
        kernel.counters = [
            "eth0": [
                ReservedHandles.matchLeaf(1): Self.counters(bytes: 700, packets: 7, drops: 3),
                ReservedHandles.matchQueue(1): Self.counters(bytes: 700, packets: 7, drops: 1),
                ReservedHandles.bulkLeaf: Self.counters(bytes: 50, packets: 1),
            ],
            "lc-eth0": [ReservedHandles.matchLeaf(1): Self.counters(bytes: 800, packets: 8)],
        ]
        let surveysBefore = kernel.surveys
        let reply = await router.respond(to: ControlRequest(method: .GET, uri: "/v1/stats", body: [], requester: TestDaemon.bob))
        let stats = try JSONDecoder().decode(StatsResponse.self, from: Data(reply.body))
        #expect(stats.conditions.map(\.id) == ["eth0", "eth0@10.0.0.5"])
        #expect(stats.conditions.last?.uplink?.droppedPackets == 3)
        #expect(stats.conditions.last?.uplink?.droppedByQueue == 1)
        #expect(stats.conditions.last?.uplink?.droppedByLoss == 2)
        #expect(stats.conditions.last?.downlink?.bytes == 800)
        #expect(stats.conditions.first?.uplink?.bytes == 50)
        #expect(kernel.surveys - surveysBefore == 1, "one survey for the two conditions of one interface")
    }
}
