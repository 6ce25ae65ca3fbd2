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
