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

    @Test("exactly the twelve reference profiles are shipped")
    func names() {
        #expect(Self.catalog.entries.count == 12)
        #expect(Set(Self.catalog.entries.map(\.profile.name)) == [
            "Slow Net", "Nasty Net", "Black Hole", "3G", "DSL", "Edge", "LTE", "WiFi", "WiFi 802.11ac",
            "Very Bad Network", "High Latency DNS", "100% Loss",
        ])
        #expect(Set(Self.catalog.entries.map(\.profile.name)) == Set(Self.reference.map(\.name)))
    }

    @Test("each profile has the reference values", arguments: reference)
    func values(_ expected: ShippedProfile) throws {
        let entry = try Self.catalog.entry(named: expected.name)
        #expect(entry.profile.name == expected.name)
        #expect(entry.profile.downlink == expected.downlink, "downlink: \(entry.profile.downlink.summary)")
        #expect(entry.profile.uplink == expected.uplink, "uplink: \(entry.profile.uplink.summary)")
        #expect(entry.profile.dnsDelay == expected.dnsDelay)
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
        #expect(Self.catalog.sortedEntries.map(\.profile.name) == [
            "3G", "100% Loss", "Black Hole", "DSL", "Edge", "High Latency DNS", "LTE", "Nasty Net",
            "Slow Net", "Very Bad Network", "WiFi", "WiFi 802.11ac",
        ])
    }
}
