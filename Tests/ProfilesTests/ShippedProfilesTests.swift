import Foundation
import Profiles
import Testing

/// One row of the reference table in docs (shared/profiles.md): what a shipped profile must do.
struct ShippedProfile: Sendable, CustomTestStringConvertible {
    var name: String
    var stem: String
    var downlink: LinkConditions
    var uplink: LinkConditions
    var dnsDelay: Delay = .zero
    var failure: ConnectionFailure?
    /// Values not yet read off a Mac must say so in the description.
    var confirmed: Bool

    var testDescription: String { name }
}

private func link(_ bandwidth: Bandwidth? = nil, _ delay: Delay = .zero, loss: Double = 0) -> LinkConditions {
    LinkConditions(bandwidth: bandwidth, delay: delay, loss: LossRate(percent: loss))
}

@Suite("Shipped profiles")
struct ShippedProfilesTests {
    /// `<package>/profiles`, found from this file: `<package>/Tests/ProfilesTests/ShippedProfilesTests.swift`.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("profiles")
        .path

    static let catalog = ProfileCatalog.load(from: [directory])

    static let reference: [ShippedProfile] = [
        ShippedProfile(name: "Slow Net", stem: "slow-net",
                       downlink: link(.kbit(32), .milliseconds(100)), uplink: link(.kbit(32), .milliseconds(100)),
                       dnsDelay: .milliseconds(200), confirmed: true),
        ShippedProfile(name: "Nasty Net", stem: "nasty-net",
                       downlink: link(loss: 90), uplink: link(loss: 90), confirmed: true),
        ShippedProfile(name: "Black Hole", stem: "black-hole",
                       downlink: link(loss: 100), uplink: .unshaped, confirmed: true),
        ShippedProfile(name: "3G", stem: "3g",
                       downlink: link(.kbit(780), .milliseconds(100)), uplink: link(.kbit(330), .milliseconds(100)), confirmed: true),
        ShippedProfile(name: "DSL", stem: "dsl",
                       downlink: link(.mbit(2), .milliseconds(5)), uplink: link(.kbit(256), .milliseconds(5)), confirmed: true),
        ShippedProfile(name: "Edge", stem: "edge",
                       downlink: link(.kbit(240), .milliseconds(400)), uplink: link(.kbit(200), .milliseconds(440)), confirmed: true),
        ShippedProfile(name: "LTE", stem: "lte",
                       downlink: link(.mbit(50), .milliseconds(50)), uplink: link(.mbit(10), .milliseconds(65)), confirmed: false),
        ShippedProfile(name: "WiFi", stem: "wifi",
                       downlink: link(.mbit(40), .milliseconds(1)), uplink: link(.mbit(33), .milliseconds(1)), confirmed: false),
        ShippedProfile(name: "WiFi 802.11ac", stem: "wifi-802.11ac",
                       downlink: link(.mbit(250), .milliseconds(1)), uplink: link(.mbit(100), .milliseconds(1)), confirmed: false),
        ShippedProfile(name: "Very Bad Network", stem: "very-bad-network",
                       downlink: link(.mbit(1), .milliseconds(500), loss: 10), uplink: link(.mbit(1), .milliseconds(500), loss: 10),
                       confirmed: false),
        ShippedProfile(name: "High Latency DNS", stem: "high-latency-dns",
                       downlink: .unshaped, uplink: .unshaped, dnsDelay: .milliseconds(3_000), confirmed: false),
        ShippedProfile(name: "100% Loss", stem: "100-percent-loss",
                       downlink: link(loss: 100), uplink: link(loss: 100), confirmed: false),
        // Browsers' and WebPageTest's presets (docs/profiles.md has the sources): each round trip
        // split evenly between the directions.
        ShippedProfile(name: "DevTools Slow 3G", stem: "devtools-slow-3g",
                       downlink: link(.kbit(500), .milliseconds(200)), uplink: link(.kbit(500), .milliseconds(200)), confirmed: true),
        ShippedProfile(name: "DevTools Slow 4G", stem: "devtools-slow-4g",
                       downlink: link(.kbit(1_600), .milliseconds(75)), uplink: link(.kbit(750), .milliseconds(75)), confirmed: true),
        ShippedProfile(name: "DevTools Fast 4G", stem: "devtools-fast-4g",
                       downlink: link(.mbit(9), .milliseconds(30)), uplink: link(.kbit(1_500), .milliseconds(30)), confirmed: true),
        ShippedProfile(name: "WebPageTest Cable", stem: "webpagetest-cable",
                       downlink: link(.mbit(5), .milliseconds(14)), uplink: link(.mbit(1), .milliseconds(14)), confirmed: true),
        ShippedProfile(name: "WebPageTest DSL", stem: "webpagetest-dsl",
                       downlink: link(.kbit(1_500), .milliseconds(25)), uplink: link(.kbit(384), .milliseconds(25)), confirmed: true),
        ShippedProfile(name: "WebPageTest 3G", stem: "webpagetest-3g",
                       downlink: link(.kbit(1_600), .milliseconds(150)), uplink: link(.kbit(768), .milliseconds(150)), confirmed: true),
        ShippedProfile(name: "WebPageTest 3G Fast", stem: "webpagetest-3g-fast",
                       downlink: link(.kbit(1_600), .milliseconds(75)), uplink: link(.kbit(768), .milliseconds(75)), confirmed: true),
        ShippedProfile(name: "WebPageTest 4G", stem: "webpagetest-4g",
                       downlink: link(.mbit(9), .milliseconds(85)), uplink: link(.mbit(9), .milliseconds(85)), confirmed: true),
        ShippedProfile(name: "WebPageTest LTE", stem: "webpagetest-lte",
                       downlink: link(.mbit(12), .milliseconds(35)), uplink: link(.mbit(12), .milliseconds(35)), confirmed: true),
        ShippedProfile(name: "WebPageTest Edge", stem: "webpagetest-edge",
                       downlink: link(.kbit(240), .milliseconds(420)), uplink: link(.kbit(200), .milliseconds(420)), confirmed: true),
        ShippedProfile(name: "WebPageTest 2G", stem: "webpagetest-2g",
                       downlink: link(.kbit(280), .milliseconds(400)), uplink: link(.kbit(256), .milliseconds(400)), confirmed: true),
        ShippedProfile(name: "Firefox GPRS", stem: "firefox-gprs",
                       downlink: link(Bandwidth(bitsPerSecond: 51_200), .milliseconds(250)), uplink: link(Bandwidth(bitsPerSecond: 20_480), .milliseconds(250)), confirmed: true),
        ShippedProfile(name: "Firefox Regular 2G", stem: "firefox-regular-2g",
                       downlink: link(.kbit(256), .milliseconds(150)), uplink: link(Bandwidth(bitsPerSecond: 51_200), .milliseconds(150)), confirmed: true),
        ShippedProfile(name: "Firefox Good 2G", stem: "firefox-good-2g",
                       downlink: link(Bandwidth(bitsPerSecond: 460_800), .milliseconds(75)), uplink: link(Bandwidth(bitsPerSecond: 153_600), .milliseconds(75)), confirmed: true),
        ShippedProfile(name: "Firefox Regular 3G", stem: "firefox-regular-3g",
                       downlink: link(.kbit(768), .milliseconds(50)), uplink: link(.kbit(256), .milliseconds(50)), confirmed: true),
        ShippedProfile(name: "Firefox Good 3G", stem: "firefox-good-3g",
                       downlink: link(Bandwidth(bitsPerSecond: 1_572_864), .milliseconds(20)), uplink: link(.kbit(768), .milliseconds(20)), confirmed: true),
        ShippedProfile(name: "Firefox Regular 4G LTE", stem: "firefox-regular-4g-lte",
                       downlink: link(Bandwidth(bitsPerSecond: 4_194_304), .milliseconds(10)), uplink: link(Bandwidth(bitsPerSecond: 3_145_728), .milliseconds(10)), confirmed: true),
        ShippedProfile(name: "Firefox DSL", stem: "firefox-dsl",
                       downlink: link(Bandwidth(bitsPerSecond: 2_097_152), Delay(microseconds: 2_500)), uplink: link(Bandwidth(bitsPerSecond: 1_048_576), Delay(microseconds: 2_500)), confirmed: true),
        ShippedProfile(name: "Firefox Wi-Fi", stem: "firefox-wi-fi",
                       downlink: link(Bandwidth(bitsPerSecond: 31_457_280), .milliseconds(1)), uplink: link(Bandwidth(bitsPerSecond: 15_728_640), .milliseconds(1)), confirmed: true),
        // The failures (docs/failures.md): nothing shaped, connections failed.
        ShippedProfile(name: "Offline", stem: "offline", downlink: .unshaped, uplink: .unshaped, failure: .offline, confirmed: true),
        ShippedProfile(name: "Server Down", stem: "server-down", downlink: .unshaped, uplink: .unshaped, failure: .refuse, confirmed: true),
    ]

    @Test("the directory is found next to the package manifest")
    func directoryExists() {
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: Self.directory, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(FileManager.default.fileExists(atPath: (Self.directory as NSString).deletingLastPathComponent + "/Package.swift"))
    }

    @Test("every shipped file loads without problems")
    func noProblems() {
        #expect(Self.catalog.problems.map(\.description) == [])
        #expect(Self.catalog.shadowed.isEmpty)
    }

    @Test("exactly the reference profiles are shipped: Apple's twelve, 19 presets of browsers and WebPageTest, two failures")
    func names() {
        #expect(Self.catalog.entries.count == 33)
        #expect(Set(Self.catalog.entries.map(\.profile.name)).isSuperset(of: [
            "Slow Net", "Nasty Net", "Black Hole", "3G", "DSL", "Edge", "LTE", "WiFi", "WiFi 802.11ac",
            "Very Bad Network", "High Latency DNS", "100% Loss",
        ]))
        #expect(Set(Self.catalog.entries.map(\.profile.name)) == Set(Self.reference.map(\.name)))
    }

    @Test("each profile has the reference values", arguments: reference)
    func values(_ expected: ShippedProfile) throws {
        let entry = try Self.catalog.entry(named: expected.name)
        #expect(entry.profile.name == expected.name)
        #expect(entry.profile.downlink == expected.downlink, "downlink: \(entry.profile.downlink.summary)")
        #expect(entry.profile.uplink == expected.uplink, "uplink: \(entry.profile.uplink.summary)")
        #expect(entry.profile.dnsDelay == expected.dnsDelay)
        #expect(entry.profile.failure == expected.failure)
    }

    @Test("each profile lives in its slug file and is found by that stem", arguments: reference)
    func fileStem(_ expected: ShippedProfile) throws {
        let entry = try Self.catalog.entry(named: expected.stem)
        #expect(entry.profile.name == expected.name)
        #expect(entry.stem == expected.stem)
        #expect(entry.file == "\(Self.directory)/\(expected.stem).yaml")
    }

    @Test("each profile is described; unconfirmed values say so", arguments: reference)
    func descriptions(_ expected: ShippedProfile) throws {
        let description = try Self.catalog.entry(named: expected.name).profile.description
        #expect(!description.isEmpty)
        #expect(description.contains("not yet confirmed") == !expected.confirmed, "\(description)")
    }

    @Test("Black Hole drops everything arriving and leaves the uplink alone")
    func blackHole() throws {
        let profile = try Self.catalog.entry(named: "Black Hole").profile
        #expect(profile.downlink.loss == .total)
        #expect(profile.uplink.isUnshaped)
        #expect(profile.summary == "down: 100% loss; up: unshaped")
    }

    @Test("High Latency DNS only delays DNS, by three seconds")
    func highLatencyDNS() throws {
        let profile = try Self.catalog.entry(named: "High Latency DNS").profile
        #expect(profile.downlink.isUnshaped && profile.uplink.isUnshaped)
        #expect(profile.dnsDelay == .seconds(3))
        #expect(profile.summary == "down: unshaped; up: unshaped; dns: +3s")
    }

    @Test("Slow Net's summary")
    func slowNetSummary() throws {
        #expect(try Self.catalog.entry(named: "slow net").profile.summary == "down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms")
    }

    @Test("listing order")
    func listingOrder() {
        #expect(Self.catalog.sortedEntries.map(\.profile.name).filter { !$0.hasPrefix("DevTools") && !$0.hasPrefix("Firefox") && !$0.hasPrefix("WebPageTest") } == [
            "3G", "100% Loss", "Black Hole", "DSL", "Edge", "High Latency DNS", "LTE", "Nasty Net",
            "Offline", "Server Down", "Slow Net", "Very Bad Network", "WiFi", "WiFi 802.11ac",
        ])
    }
}
