import Foundation
import Profiles
import Testing

@Suite("Shipped scenarios")
struct ShippedScenariosTests {
    /// `<package>/scenarios`, beside `profiles/` (see `ShippedProfilesTests.directory`).
    static let directory = URL(fileURLWithPath: ShippedProfilesTests.directory)
        .deletingLastPathComponent()
        .appendingPathComponent("scenarios")
        .path

    static let catalog = ScenarioCatalog.load(from: [directory], profiles: ShippedProfilesTests.catalog)

    static let stems = ["elevator", "flaky-wifi", "slow-net-then-black-hole", "subway", "wifi-to-lte"]

    /// The scenario of `stem`, or a recorded issue.
    static func scenario(_ stem: String) throws -> Scenario {
        try catalog.entry(named: stem).scenario
    }

    @Test("the directory is found next to the package manifest")
    func directoryExists() {
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: Self.directory, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(FileManager.default.fileExists(atPath: (Self.directory as NSString).deletingLastPathComponent + "/Package.swift"))
    }

    @Test("every shipped file loads without problems against the shipped profiles")
    func noProblems() {
        #expect(Self.catalog.problems.map(\.description) == [])
        #expect(Self.catalog.shadowed.isEmpty)
    }

    @Test("exactly the five scenarios are shipped, each in its own file")
    func names() throws {
        #expect(Self.catalog.sortedEntries.map(\.scenario.name) == ["Elevator", "Flaky Wi-Fi", "Slow Net, then Black Hole", "Subway", "Wi-Fi to LTE"])
        #expect(Self.catalog.sortedEntries.map(\.stem) == Self.stems)
        for stem in Self.stems {
            #expect(try Self.catalog.entry(named: stem).file == "\(Self.directory)/\(stem).yaml")
        }
    }

    @Test("each scenario says what it shows and when to use it", arguments: stems)
    func descriptions(stem: String) throws {
        let description = try Self.scenario(stem).description
        #expect(description.count > 150, "\(description)")
        #expect(description.contains("Use it") || description.contains("Shows"), "\(description)")
    }

    @Test("each scenario plays: a schedule has a first step, and every duration is within a step's bounds", arguments: stems)
    func plays(stem: String) throws {
        let scenario = try Self.scenario(stem)
        var schedule = ScenarioSchedule(scenario, seed: scenario.seed ?? 1)
        for _ in 0..<100 {
            guard let play = schedule.next() else { break }
            if let milliseconds = play.milliseconds {
                #expect((StepDuration.minimumMilliseconds...StepDuration.maximumMilliseconds).contains(milliseconds))
            }
        }
    }

    @Test("Slow Net, then Black Hole: Slow Net until 20 KB have arrived, then Black Hole until next")
    func slowNetThenBlackHole() throws {
        let scenario = try Self.scenario("Slow Net, then Black Hole")
        #expect(scenario.steps.map(\.profile) == [.named("Slow Net"), .named("Black Hole")])
        #expect(scenario.steps[0].trigger == StepTrigger(direction: .download, unit: .bytes, threshold: 20_000))
        #expect(scenario.steps[0].duration == nil)
        #expect(scenario.steps[1].waitsForNext)
        #expect(!scenario.loops && scenario.repeatCount == 1)
    }

    @Test("Subway: a good mobile link for 20 to 60 s, then a tunnel of total loss for 3 to 10 s, looping, seeded")
    func subway() throws {
        let scenario = try Self.scenario("Subway")
        #expect(scenario.loops)
        #expect(scenario.seed != nil)
        try #require(scenario.steps.count == 2)
        #expect(scenario.steps[0].duration == .range(milliseconds: 20_000...60_000))
        #expect(scenario.steps[1].duration == .range(milliseconds: 3_000...10_000))
        guard case .inline(let good) = scenario.steps[0].profile, case .inline(let tunnel) = scenario.steps[1].profile else {
            Issue.record("Subway's steps are not inline")
            return
        }
        #expect(good.downlink == LinkConditions(bandwidth: .mbit(10), delay: .milliseconds(40), jitter: .milliseconds(5)))
        #expect(good.uplink == LinkConditions(bandwidth: .mbit(3), delay: .milliseconds(40), jitter: .milliseconds(5)))
        #expect(tunnel.downlink.loss == .total && tunnel.uplink.loss == .total)
        #expect(scenario.steps.map(\.displayName) == ["Between stations", "Tunnel"])
    }

    @Test("Flaky Wi-Fi: WiFi, a short loss burst, a delay spike at the same bandwidth, looping")
    func flakyWiFi() throws {
        let scenario = try Self.scenario("Flaky Wi-Fi")
        let wifi = try ShippedProfilesTests.catalog.entry(named: "WiFi").profile
        #expect(scenario.loops)
        #expect(scenario.seed == nil)
        try #require(scenario.steps.count == 3)
        #expect(scenario.steps[0].profile == .named("WiFi"))
        #expect(scenario.steps.map(\.duration) == [
            .range(milliseconds: 2_000...8_000), .range(milliseconds: 200...800), .range(milliseconds: 300...1_500),
        ])
        guard case .inline(let burst) = scenario.steps[1].profile, case .inline(let spike) = scenario.steps[2].profile else {
            Issue.record("Flaky Wi-Fi's second and third steps are not inline")
            return
        }
        #expect(burst.downlink.loss == LossRate(percent: 30) && burst.uplink.loss == LossRate(percent: 30))
        #expect(burst.downlink.bandwidth == wifi.downlink.bandwidth && burst.uplink.bandwidth == wifi.uplink.bandwidth)
        #expect(spike.downlink.bandwidth == wifi.downlink.bandwidth && spike.uplink.bandwidth == wifi.uplink.bandwidth)
        #expect(spike.downlink.delay == wifi.downlink.delay + .milliseconds(300))
        #expect(spike.uplink.delay == wifi.uplink.delay + .milliseconds(300))
        #expect(spike.downlink.loss.isZero && spike.uplink.loss.isZero)
    }

    @Test("Elevator: six steps down to nothing and back up the same way, 5 s each, once")
    func elevator() throws {
        let scenario = try Self.scenario("Elevator")
        #expect(!scenario.loops && scenario.repeatCount == 1)
        let names = scenario.steps.map(\.displayName)
        #expect(names == ["LTE", "3G", "Edge", "Firefox GPRS", "Nasty Net", "100% Loss", "Nasty Net", "Firefox GPRS", "Edge", "3G", "LTE"])
        #expect(Array(names.reversed()) == names, "back up the way it came down")
        #expect(scenario.steps.allSatisfy { $0.duration == .fixed(milliseconds: 5_000) && $0.trigger == nil })
        // Getting worse on the way down: never more bandwidth, and loss only once it runs out.
        let profiles = try scenario.steps.prefix(6).map { step -> Profile in
            guard case .named(let name) = step.profile else { throw CancellationError() }
            return try ShippedProfilesTests.catalog.entry(named: name).profile
        }
        for (better, worse) in zip(profiles, profiles.dropFirst()) {
            #expect(worse.downlink.loss >= better.downlink.loss, "\(better.name) -> \(worse.name)")
            if let worseRate = worse.downlink.bandwidth, let betterRate = better.downlink.bandwidth {
                #expect(worseRate < betterRate, "\(better.name) -> \(worse.name)")
            }
        }
        #expect(profiles.last?.downlink.loss == .total && profiles.last?.uplink.loss == .total)
    }
}

@Suite("Wi-Fi to LTE")
struct WiFiToLTETests {
    @Test("Wi-Fi for 20 s, a one-second drop-out that hands the flows over, then LTE")
    func steps() throws {
        let scenario = try ShippedScenariosTests.scenario("wifi-to-lte")
        try #require(scenario.steps.count == 3)
        #expect(scenario.steps[0].displayName == "WiFi" && scenario.steps[2].displayName == "LTE")
        let handover = scenario.steps[1]
        #expect(handover.handsOver && !handover.resetsConnections)
        guard case .inline(let profile) = handover.profile else {
            Issue.record("the handover step has no values of its own")
            return
        }
        #expect(profile.failure == .linkDown)
        #expect(!scenario.loops)
    }
}
