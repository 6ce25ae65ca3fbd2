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

@Suite("GET /metrics: Prometheus's text format")
struct MetricsTextTests {
    @Test("A failure in force: which one, and what it refused, per condition")
    func failures() {
        let idle = DirectionCounters(leaves: .zero, queueDrops: 0)
        var counters = ConditionCounters(id: "eth0@10.0.0.5:443", profile: "Server Down", uplink: idle, downlink: idle)
        counters.failure = "refuse"
        counters.failedPackets = 41
        let lines = MetricsText.render([
            .init(id: "eth0@10.0.0.5:443", profile: "Server Down", leaseSecondsLeft: nil, counters: counters, failure: "refuse"),
            .init(id: "eth0", profile: "Slow Net", leaseSecondsLeft: nil, counters: nil),
        ]).split(separator: "\n").map(String.init)
        #expect(lines.contains(#"linkcond_condition_failure{condition="eth0@10.0.0.5:443",failure="refuse"} 1"#))
        #expect(lines.contains(#"linkcond_failed_packets_total{condition="eth0@10.0.0.5:443",failure="refuse"} 41"#))
        #expect(!lines.contains { $0.hasPrefix("linkcond_condition_failure{condition=\"eth0\"") })
    }

    @Test("Each condition's state, lease and counters per direction, with HELP and TYPE once per family")
    func render() {
        let counters = ConditionCounters(
            id: "eth0", profile: "Slow Net",
            uplink: DirectionCounters(leaves: TrafficStatistics(packets: 4, bytes: 300, drops: 3, overlimits: 0, queuedPackets: 0, queuedBytes: 0), queueDrops: 2),
            downlink: DirectionCounters(leaves: TrafficStatistics(packets: 9, bytes: 9000, drops: 0, overlimits: 0, queuedPackets: 2, queuedBytes: 3000), queueDrops: 0)
        )
        let text = MetricsText.render([
            .init(id: "eth0", profile: "Slow Net", leaseSecondsLeft: 25, counters: counters),
            .init(id: "eth1", profile: nil, leaseSecondsLeft: nil, counters: nil),
        ])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("# TYPE ") }.count == 9)
        #expect(lines.contains(#"linkcond_condition_active{condition="eth0",profile="Slow Net"} 1"#))
        #expect(lines.contains(#"linkcond_condition_active{condition="eth1",profile=""} 0"#))
        #expect(lines.contains(#"linkcond_lease_seconds_left{condition="eth0"} 25"#))
        #expect(lines.contains(#"linkcond_bytes_total{condition="eth0",direction="down"} 9000"#))
        #expect(lines.contains(#"linkcond_packets_total{condition="eth0",direction="up"} 4"#))
        #expect(lines.contains(#"linkcond_dropped_packets_total{condition="eth0",direction="up",reason="loss"} 1"#))
        #expect(lines.contains(#"linkcond_dropped_packets_total{condition="eth0",direction="up",reason="queue"} 2"#))
        #expect(lines.contains(#"linkcond_dropped_packets_total{condition="eth0",direction="down",reason="queue"} 0"#))
        #expect(lines.contains(#"linkcond_queued_bytes{condition="eth0",direction="down"} 3000"#))
        #expect(!text.contains(#"condition="eth1",direction"#), "a condition that is off has no counters")
        #expect(text.hasSuffix("\n"))
    }

    @Test("Label values escape backslash, double quote and newline")
    func escaping() {
        #expect(MetricsText.escaped(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
    }

    @Test("Served on the control socket to anyone, as text")
    func endpoint() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer)
        _ = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/condition", body: Array(#"{"profile": "Slow Net"}"#.utf8), requester: TestDaemon.root))
        let reply = await router.respond(to: ControlRequest(method: .GET, uri: "/metrics", body: [], requester: TestDaemon.bob))
        #expect(reply.status == HTTPResponseStatus.ok)
        #expect(reply.contentType == "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(text.contains(#"linkcond_condition_active{condition="eth0",profile="Slow Net"} 1"#))
        #expect(text.contains(#"linkcond_bytes_total{condition="eth0",direction="down"} 0"#))
        let post = await router.respond(to: ControlRequest(method: .DELETE, uri: "/metrics", body: [], requester: TestDaemon.root))
        #expect(post.status == HTTPResponseStatus.methodNotAllowed)
    }
}
