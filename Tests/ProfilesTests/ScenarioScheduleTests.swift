import Profiles
import Testing

/// A step naming `profile`, lasting `duration` (none: until `linkcond next`).
private func step(_ profile: String, _ duration: StepDuration? = nil, repeat repeatCount: Int = 1) -> ScenarioStep {
    ScenarioStep(profile: .named(profile), duration: duration, repeatCount: repeatCount)
}

private func fixed(_ milliseconds: Int64) -> StepDuration { .fixed(milliseconds: milliseconds) }

/// The first `limit` plays of `scenario` with `seed`, fewer when it ends sooner.
private func plays(_ scenario: Scenario, seed: UInt64 = 1, limit: Int = 10_000) -> [ScenarioSchedule.Play] {
    var schedule = ScenarioSchedule(scenario, seed: seed)
    var result: [ScenarioSchedule.Play] = []
    while result.count < limit, let play = schedule.next() {
        result.append(play)
    }
    return result
}

/// A play in the compact form the tests compare: step index, round, repetition, milliseconds.
private struct Played: Equatable, CustomStringConvertible {
    var index: Int
    var round: Int
    var repetition: Int
    var milliseconds: Int64?

    init(_ index: Int, _ round: Int, _ repetition: Int, _ milliseconds: Int64?) {
        self.index = index
        self.round = round
        self.repetition = repetition
        self.milliseconds = milliseconds
    }

    init(_ play: ScenarioSchedule.Play) {
        self.init(play.index, play.round, play.repetition, play.milliseconds)
    }

    var description: String { "(\(index), \(round), \(repetition), \(milliseconds.map(String.init) ?? "nil"))" }
}

@Suite("ScenarioSchedule")
struct ScenarioScheduleTests {
    @Test("plays the steps once, in the order written, each for its fixed time")
    func fixedOrder() {
        let scenario = Scenario(name: "S", steps: [step("A", fixed(1_000)), step("B", fixed(20)), step("C")])
        var schedule = ScenarioSchedule(scenario, seed: 7)
        #expect(schedule.hasNext)
        #expect(schedule.next().map(Played.init) == Played(0, 1, 1, 1_000))
        #expect(schedule.hasNext)
        #expect(schedule.next().map(Played.init) == Played(1, 1, 1, 20))
        #expect(schedule.next().map(Played.init) == Played(2, 1, 1, nil), "a step without a duration has none")
        #expect(!schedule.hasNext)
        #expect(schedule.next() == nil)
        #expect(schedule.next() == nil, "and stays over")
    }

    @Test("a step's repeat plays it that many times in a row")
    func stepRepeat() {
        let scenario = Scenario(name: "S", steps: [step("A", fixed(10), repeat: 3), step("B", fixed(20)), step("C", fixed(30), repeat: 2)])
        #expect(plays(scenario).map(Played.init) == [
            Played(0, 1, 1, 10), Played(0, 1, 2, 10), Played(0, 1, 3, 10),
            Played(1, 1, 1, 20),
            Played(2, 1, 1, 30), Played(2, 1, 2, 30),
        ])
    }

    @Test("the scenario's repeat plays the whole list that many times, step repeats included")
    func listRepeat() {
        let scenario = Scenario(name: "S", steps: [step("A", fixed(10), repeat: 2), step("B", fixed(20))], repeatCount: 3)
        #expect(plays(scenario).map(Played.init) == [
            Played(0, 1, 1, 10), Played(0, 1, 2, 10), Played(1, 1, 1, 20),
            Played(0, 2, 1, 10), Played(0, 2, 2, 10), Played(1, 2, 1, 20),
            Played(0, 3, 1, 10), Played(0, 3, 2, 10), Played(1, 3, 1, 20),
        ])
    }

    @Test("a looping scenario never ends, and counts its rounds")
    func loops() {
        let scenario = Scenario(name: "S", steps: [step("A", fixed(10)), step("B", fixed(20), repeat: 2)], loops: true)
        let played = plays(scenario, limit: 3_000)
        #expect(played.count == 3_000)
        #expect(played.map(\.index) == Array(repeating: [0, 1, 1], count: 1_000).flatMap { $0 })
        #expect(played.map(\.round) == (1...1_000).flatMap { [$0, $0, $0] })
        #expect(played.map(\.repetition) == Array(repeating: [1, 1, 2], count: 1_000).flatMap { $0 })
        var schedule = ScenarioSchedule(scenario, seed: 1)
        for _ in 0..<5_000 { _ = schedule.next() }
        #expect(schedule.hasNext)
    }

    @Test("a loop of one step that waits for next plays it again and again")
    func loopOfNext() {
        let scenario = Scenario(name: "S", steps: [step("A")], loops: true)
        #expect(plays(scenario, limit: 4).map(Played.init) == [Played(0, 1, 1, nil), Played(0, 2, 1, nil), Played(0, 3, 1, nil), Played(0, 4, 1, nil)])
    }

    @Test("loop wins over repeat: the model ignores repeatCount when it loops")
    func loopIgnoresRepeat() {
        let scenario = Scenario(name: "S", steps: [step("A", fixed(10))], repeatCount: 2, loops: true)
        #expect(plays(scenario, limit: 100).count == 100)
    }

    @Test("a scenario without steps has nothing to play")
    func noSteps() {
        var schedule = ScenarioSchedule(Scenario(name: "S", steps: []), seed: 1)
        #expect(!schedule.hasNext)
        #expect(schedule.next() == nil)
    }

    @Test("range durations stay within their bounds, both ends included, and vary", arguments: [
        10...11, 3_000...8_000, 200...1_500, 60_000...86_400_000,
    ] as [ClosedRange<Int64>])
    func rangeWithinBounds(range: ClosedRange<Int64>) {
        let scenario = Scenario(name: "S", steps: [step("A", .range(milliseconds: range))], loops: true)
        let drawn = plays(scenario, seed: 99, limit: 2_000).compactMap(\.milliseconds)
        #expect(drawn.count == 2_000)
        #expect(drawn.allSatisfy { range.contains($0) })
        #expect(Set(drawn).count > 1)
        if range.count == 2 {
            #expect(Set(drawn) == [range.lowerBound, range.upperBound], "both ends are drawn")
        }
    }

    @Test("each repetition of a step draws its own duration")
    func repetitionsDrawAgain() {
        let scenario = Scenario(name: "S", steps: [step("A", .range(milliseconds: 1_000...100_000), repeat: 50)])
        let drawn = plays(scenario).compactMap(\.milliseconds)
        #expect(drawn.count == 50)
        #expect(Set(drawn).count > 40)
    }

    @Test("the same scenario and seed give the same durations; another seed others")
    func reproducible() {
        let scenario = Scenario(
            name: "S",
            steps: [step("A", .range(milliseconds: 20_000...60_000)), step("B", fixed(500)), step("C", .range(milliseconds: 3_000...10_000))],
            loops: true
        )
        let first = plays(scenario, seed: 42, limit: 300)
        let again = plays(scenario, seed: 42, limit: 300)
        let other = plays(scenario, seed: 43, limit: 300)
        #expect(first == again)
        #expect(first.map(\.index) == other.map(\.index), "the order does not depend on the seed")
        #expect(first.map(\.milliseconds) != other.map(\.milliseconds))
        #expect(first.filter { $0.index == 1 }.allSatisfy { $0.milliseconds == 500 }, "fixed durations take no draw")
        #expect(ScenarioSchedule(scenario, seed: 42) == ScenarioSchedule(scenario, seed: 42))
        #expect(ScenarioSchedule(scenario, seed: 42) != ScenarioSchedule(scenario, seed: 43))
    }

    @Test("a schedule partway through equals another at the same point, and keeps the seed it was given")
    func equalityFollowsProgress() {
        let scenario = Scenario(name: "S", steps: [step("A", .range(milliseconds: 10...1_000)), step("B", fixed(20))], repeatCount: 2)
        var one = ScenarioSchedule(scenario, seed: 5)
        var two = ScenarioSchedule(scenario, seed: 5)
        _ = one.next()
        #expect(one != two)
        _ = two.next()
        #expect(one == two)
        #expect(one.seed == 5)
        #expect(one.scenario == scenario)
    }

    @Test("a parsed file plays as written")
    func parsedScenario() throws {
        let yaml = """
            name: Parsed
            seed: 3
            repeat: 2
            steps:
              - profile: Slow Net
                until: 20KB of download
              - profile: Edge
                for: 1s..2s
                repeat: 2
              - profile: Black Hole
                for: 500ms
            """
        let scenario = try ScenarioParser.parse(yaml: yaml, file: "parsed.yaml")
        let played = plays(scenario, seed: try #require(scenario.seed))
        #expect(played.map(\.index) == [0, 1, 1, 2, 0, 1, 1, 2])
        #expect(played.map(\.round) == [1, 1, 1, 1, 2, 2, 2, 2])
        #expect(played.filter { $0.index == 0 }.allSatisfy { $0.milliseconds == nil }, "a trigger is not a duration")
        #expect(played.filter { $0.index == 1 }.allSatisfy { (1_000...2_000).contains($0.milliseconds ?? 0) })
        #expect(played.filter { $0.index == 2 }.allSatisfy { $0.milliseconds == 500 })
        #expect(played == plays(scenario, seed: 3))
    }
}
