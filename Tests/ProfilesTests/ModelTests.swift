import Profiles
import NameMatching
import Testing

@Suite("LinkConditions, Profile and ProfileError")
struct ModelTests {
    @Test("a direction's summary lists what is set, in a fixed order")
    func directionSummary() {
        #expect(LinkConditions.unshaped.summary == "unshaped")
        #expect(LinkConditions.unshaped.isUnshaped)
        let full = LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100), jitter: .milliseconds(10), loss: LossRate(percent: 1))
        #expect(full.summary == "32kbit 100ms ±10ms 1% loss")
        #expect(!full.isUnshaped)
        #expect(LinkConditions(loss: .total).summary == "100% loss")
        #expect(LinkConditions(delay: .milliseconds(5)).summary == "5ms")
    }

    @Test("a direction's summary adds its impairments: the jitter's shape and order next to the jitter, then the rest")
    func impairmentSummary() {
        let real = LinkConditions(
            bandwidth: .mbit(10), delay: .milliseconds(40), jitter: .milliseconds(10),
            impairments: Impairments(
                jitterDistribution: .normal, burstLoss: BurstLoss(average: LossRate(percent: 2), meanBurstPackets: 4),
                duplicate: LossRate(percent: 0.5), queue: .milliseconds(50)
            )
        )
        #expect(real.summary == "10Mbit 40ms ±10ms normal 2% burst loss (4 packets) 0.5% duplicated queue 50ms")
        #expect(!real.isUnshaped)

        let ordered = LinkConditions(
            delay: .milliseconds(40), jitter: .milliseconds(10), loss: LossRate(percent: 1),
            impairments: Impairments(keepsOrder: true, lossCorrelation: LossRate(percent: 25), corrupt: LossRate(percent: 0.1))
        )
        #expect(ordered.summary == "40ms ±10ms in order 1% loss 0.1% corrupted")

        let reordering = LinkConditions(
            bandwidth: .mbit(1), delay: .milliseconds(20),
            impairments: Impairments(
                burstLoss: BurstLoss(average: LossRate(percent: 1), meanBurstPackets: 2.5), reorder: LossRate(percent: 5), queue: .bytes(64_000)
            )
        )
        #expect(reordering.summary == "1Mbit 20ms 1% burst loss (2.5 packets) 5% reordered queue 64000 B")
        #expect(LinkConditions(bandwidth: .mbit(1), impairments: Impairments(queue: .packets(100))).summary == "1Mbit queue 100 packets")
        // Correlations alone say nothing the summary shows: they shape what the values do.
        #expect(LinkConditions(impairments: Impairments(jitterCorrelation: LossRate(percent: 25))).summary == "unshaped")
        #expect(!LinkConditions(impairments: Impairments(jitterCorrelation: LossRate(percent: 25))).isUnshaped)
        #expect(Impairments().isNone)
    }

    @Test("a profile's summary names both directions and the DNS delay only when set")
    func profileSummary() {
        let slow = Profile(
            name: "Slow Net",
            downlink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
            uplink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
            dnsDelay: .milliseconds(200)
        )
        #expect(slow.summary == "down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms")
        #expect(Profile(name: "Black Hole", downlink: LinkConditions(loss: .total)).summary == "down: 100% loss; up: unshaped")
    }

    @Test("hasSameConditions ignores name and description only")
    func sameConditions() {
        let a = Profile(name: "A", description: "one", downlink: LinkConditions(delay: .milliseconds(5)))
        var b = a
        b.name = "B"
        b.description = "two"
        #expect(a.hasSameConditions(as: b))
        b.dnsDelay = .milliseconds(1)
        #expect(!a.hasSameConditions(as: b))
        var c = a
        c.uplink.loss = LossRate(percent: 1)
        #expect(!a.hasSameConditions(as: c))
    }

    @Test("names reduce to lower-case words joined by dashes", arguments: [
        ("Slow Net", "slow-net"),
        ("slow-net", "slow-net"),
        ("  SLOW--net!! ", "slow-net"),
        ("WiFi 802.11ac", "wifi-802-11ac"),
        ("wifi-802.11ac", "wifi-802-11ac"),
        ("100% Loss", "100-loss"),
        ("High Latency DNS", "high-latency-dns"),
        ("Café Wi-Fi", "café-wi-fi"),
    ])
    func slug(name: String, slug: String) {
        #expect(profileSlug(name) == slug)
    }

    @Test("ProfileError.description is file:line: field: message", arguments: [
        (3, "downlink.loss", "p.yaml:3: downlink.loss: too much"),
        (0, "name", "p.yaml: name: too much"),
        (7, "", "p.yaml:7: too much"),
        (0, "", "p.yaml: too much"),
    ] as [(Int, String, String)])
    func errorDescription(line: Int, field: String, expected: String) {
        let error = ProfileError(code: .badValue, file: "p.yaml", line: line, field: field, message: "too much")
        #expect(error.description == expected)
    }

    @Test("error codes have stable spellings")
    func codeSpellings() {
        let codes: [ProfileError.Code] = [.unreadable, .syntax, .wrongType, .unknownField, .missingField, .badValue, .duplicateName]
        #expect(codes.map(\.description) == ["unreadable", "syntax", "wrong-type", "unknown-field", "missing-field", "bad-value", "duplicate-name"])
    }
}
