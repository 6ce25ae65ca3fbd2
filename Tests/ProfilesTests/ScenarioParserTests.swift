import Profiles
import Testing

/// The error `ScenarioParser` reports for `yaml`, or `nil` when the text parses.
func scenarioError(_ yaml: String, file: String = "test.yaml") -> ProfileError? {
    do {
        _ = try ScenarioParser.parse(yaml: yaml, file: file)
        return nil
    } catch {
        return error
    }
}

/// A scenario file whose one step is `step`, written as the body of a block mapping under `- `.
func oneStepYAML(_ step: String) -> String {
    "name: X\nsteps:\n  - " + step.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n    ") + "\n"
}

@Suite("ScenarioParser")
struct ScenarioParserTests {
    @Test("A step with reset: true resets as it begins; without it, or with false, it does not")
    func resetStep() throws {
        let yaml = "name: X\nsteps:\n  - profile: Edge\n    reset: true\n  - profile: Edge\n    reset: false\n  - profile: Edge\n"
        let scenario = try ScenarioParser.parse(yaml: yaml, file: "x.yaml")
        #expect(scenario.steps.map(\.resetsConnections) == [true, false, false])
    }

    @Test("reads a scenario with every field set")
    func fullScenario() throws {
        let yaml = """
            name: Slow Net, then Black Hole
            description: >-
              Starts slow,
              then nothing.
            seed: 42
            repeat: 3
            steps:
              - profile: Slow Net
                until: 20KB of download
              - label: Tunnel
                downlink: { loss: 100% }
                uplink: { loss: 100% }
                for: 3s..8s
                repeat: 2
              - profile: black-hole
                label: The end
                for: 1.5s
                until: 100 packets of upload
              - profile: Black Hole
                until: next
            """
        let scenario = try ScenarioParser.parse(yaml: yaml, file: "full.yaml")
        #expect(scenario == Scenario(
            name: "Slow Net, then Black Hole",
            description: "Starts slow, then nothing.",
            steps: [
                ScenarioStep(profile: .named("Slow Net"), trigger: StepTrigger(direction: .download, unit: .bytes, threshold: 20_000), line: 8),
                ScenarioStep(
                    label: "Tunnel",
                    profile: .inline(Profile(name: "Tunnel", downlink: LinkConditions(loss: .total), uplink: LinkConditions(loss: .total))),
                    duration: .range(milliseconds: 3_000...8_000), repeatCount: 2, line: 10
                ),
                ScenarioStep(
                    label: "The end", profile: .named("black-hole"), duration: .fixed(milliseconds: 1_500),
                    trigger: StepTrigger(direction: .upload, unit: .packets, threshold: 100), line: 15
                ),
                ScenarioStep(profile: .named("Black Hole"), line: 19),
            ],
            repeatCount: 3,
            loops: false,
            seed: 42
        ))
        #expect(scenario.namedProfiles == ["Slow Net", "black-hole", "Black Hole"])
        #expect(scenario.steps.map(\.displayName) == ["Slow Net", "Tunnel", "The end", "Black Hole"])
        #expect(scenario.steps.map(\.waitsForNext) == [false, false, false, true])
    }

    @Test("absent fields take their defaults: plays once, no loop, fresh seed, empty description")
    func defaults() throws {
        let scenario = try ScenarioParser.parse(yaml: "name: Minimal\nsteps:\n  - profile: Edge\n", file: "x.yaml")
        #expect(scenario.name == "Minimal")
        #expect(scenario.description == "")
        #expect(scenario.repeatCount == 1)
        #expect(scenario.loops == false)
        #expect(scenario.seed == nil)
        #expect(scenario.steps == [ScenarioStep(profile: .named("Edge"), line: 3)])
        #expect(scenario.steps[0].waitsForNext)
    }

    @Test("loop: true plays forever; loop: false is the default", arguments: [
        ("true", true), ("True", true), ("TRUE", true), ("false", false), ("False", false), ("FALSE", false),
    ])
    func loop(written: String, loops: Bool) throws {
        let scenario = try ScenarioParser.parse(yaml: "name: X\nloop: \(written)\nsteps: [{ profile: Edge, for: 1s }]\n", file: "x.yaml")
        #expect(scenario.loops == loops)
        #expect(scenario.repeatCount == 1)
    }

    @Test("seed and repeat take their whole range")
    func numberBounds() throws {
        let largest = try ScenarioParser.parse(yaml: "name: X\nseed: 18446744073709551615\nrepeat: 10000\nsteps: [{ profile: E, repeat: 10000 }]\n", file: "x.yaml")
        #expect(largest.seed == .max)
        #expect(largest.repeatCount == 10_000)
        #expect(largest.steps[0].repeatCount == 10_000)
        let smallest = try ScenarioParser.parse(yaml: "name: X\nseed: 0\nrepeat: 1\nsteps: [{ profile: E, repeat: 1 }]\n", file: "x.yaml")
        #expect(smallest.seed == 0)
        #expect(smallest.repeatCount == 1)
        #expect(smallest.steps[0].repeatCount == 1)
    }

    @Test("an inline step is named by its label, else after the scenario and its 1-based position")
    func inlineNames() throws {
        let yaml = """
            name: Train
            steps:
              - profile: Edge
              - downlink: { bandwidth: 1Mbit }
              - label: Tunnel
                uplink: { loss: 100% }
              - dns: { delay: 2s }
            """
        let scenario = try ScenarioParser.parse(yaml: yaml, file: "train.yaml")
        let names = scenario.steps.compactMap { step -> String? in
            guard case .inline(let profile) = step.profile else { return nil }
            return profile.name
        }
        #expect(names == ["Train, step 2", "Tunnel", "Train, step 4"])
        #expect(scenario.steps[1].label == nil)
        #expect(scenario.steps[1].displayName == "Train, step 2")
        #expect(scenario.steps[2].label == "Tunnel")
        #expect(scenario.steps.map(\.line) == [3, 4, 5, 7])
        guard case .inline(let dnsOnly) = scenario.steps[3].profile else {
            Issue.record("step 4 is not inline")
            return
        }
        #expect(dnsOnly.downlink.isUnshaped && dnsOnly.uplink.isUnshaped)
        #expect(dnsOnly.dnsDelay == .seconds(2))
    }

    @Test("inline values read exactly as a profile file's")
    func inlineValuesMatchProfiles() throws {
        let values = "downlink:\n  bandwidth: 1.5Mbit\n  delay: 100ms\n  jitter: 10ms\n  loss: 0.5%\nuplink: { bandwidth: 256kbit, delay: 50ms }\ndns: { delay: 200ms }\n"
        let profile = try ProfileParser.parse(yaml: "name: Same\n" + values, file: "p.yaml")
        let scenario = try ScenarioParser.parse(yaml: oneStepYAML("label: Same\n" + values), file: "s.yaml")
        #expect(scenario.steps[0].profile == .inline(profile))
    }

    @Test("the name and the label are trimmed; names keep YAML 1.1 words as text")
    func trimmed() throws {
        let scenario = try ScenarioParser.parse(yaml: "name: \"  Off  \"\nsteps:\n  - { label: ' no ', profile: '  Slow Net ' }\n", file: "x.yaml")
        #expect(scenario.name == "Off")
        #expect(scenario.steps[0].label == "no")
        #expect(scenario.steps[0].profile == .named("Slow Net"))
    }

    @Test("durations: fixed, in ms, s, m or h with decimals, or a range", arguments: [
        ("20s", StepDuration.fixed(milliseconds: 20_000)),
        ("500ms", .fixed(milliseconds: 500)),
        ("1.5s", .fixed(milliseconds: 1_500)),
        ("2m", .fixed(milliseconds: 120_000)),
        ("0.5m", .fixed(milliseconds: 30_000)),
        ("1h", .fixed(milliseconds: 3_600_000)),
        ("24h", .fixed(milliseconds: 86_400_000)),
        ("1440m", .fixed(milliseconds: StepDuration.maximumMilliseconds)),
        ("10ms", .fixed(milliseconds: 10)),
        ("0.01s", .fixed(milliseconds: 10)),
        ("20 s", .fixed(milliseconds: 20_000)),
        ("3S", .fixed(milliseconds: 3_000)),
        ("3s..8s", .range(milliseconds: 3_000...8_000)),
        ("3s .. 8s", .range(milliseconds: 3_000...8_000)),
        ("200ms..1.5s", .range(milliseconds: 200...1_500)),
        ("10ms..11ms", .range(milliseconds: 10...11)),
        ("1m..24h", .range(milliseconds: 60_000...86_400_000)),
    ])
    func durations(written: String, duration: StepDuration) throws {
        let scenario = try ScenarioParser.parse(yaml: oneStepYAML("profile: Edge\nfor: \(written)"), file: "x.yaml")
        #expect(scenario.steps[0].duration == duration)
        #expect(try StepDuration(parsing: written) == duration)
    }

    @Test("triggers: bytes in decimal or binary units, or packets, of download or upload", arguments: [
        ("20KB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 20_000)),
        ("20 KB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 20_000)),
        ("20kB of upload", StepTrigger(direction: .upload, unit: .bytes, threshold: 20_000)),
        ("1.5 MB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 1_500_000)),
        ("2GB of upload", StepTrigger(direction: .upload, unit: .bytes, threshold: 2_000_000_000)),
        ("300 B of download", StepTrigger(direction: .download, unit: .bytes, threshold: 300)),
        ("1B of download", StepTrigger(direction: .download, unit: .bytes, threshold: 1)),
        ("1KiB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 1_024)),
        ("1.5 KiB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 1_536)),
        ("2MiB of upload", StepTrigger(direction: .upload, unit: .bytes, threshold: 2_097_152)),
        ("1GiB of download", StepTrigger(direction: .download, unit: .bytes, threshold: 1_073_741_824)),
        ("100 packets of upload", StepTrigger(direction: .upload, unit: .packets, threshold: 100)),
        ("1 packet of download", StepTrigger(direction: .download, unit: .packets, threshold: 1)),
        ("100packets of download", StepTrigger(direction: .download, unit: .packets, threshold: 100)),
        ("  20KB   of   Download ", StepTrigger(direction: .download, unit: .bytes, threshold: 20_000)),
    ])
    func triggers(written: String, trigger: StepTrigger) throws {
        let scenario = try ScenarioParser.parse(yaml: oneStepYAML("profile: Edge\nuntil: \"\(written)\""), file: "x.yaml")
        #expect(scenario.steps[0].trigger == trigger)
        #expect(scenario.steps[0].duration == nil)
        #expect(try StepTrigger(parsing: written) == trigger)
    }

    @Test("until: next is the same as no end at all, in any case", arguments: ["next", "Next", "NEXT", " next "])
    func untilNext(written: String) throws {
        let scenario = try ScenarioParser.parse(yaml: oneStepYAML("profile: Edge\nuntil: '\(written)'"), file: "x.yaml")
        #expect(scenario.steps[0].trigger == nil)
        #expect(scenario.steps[0].duration == nil)
        #expect(scenario.steps[0].waitsForNext)
    }

    @Test("a step may have both a duration and a trigger: the first to come ends it")
    func durationAndTrigger() throws {
        let scenario = try ScenarioParser.parse(yaml: oneStepYAML("profile: Edge\nfor: 30s\nuntil: 1MB of download"), file: "x.yaml")
        #expect(scenario.steps[0].duration == .fixed(milliseconds: 30_000))
        #expect(scenario.steps[0].trigger == StepTrigger(direction: .download, unit: .bytes, threshold: 1_000_000))
    }

    @Test("1000 steps are allowed")
    func thousandSteps() throws {
        let yaml = "name: X\nsteps:\n" + String(repeating: "  - profile: Edge\n", count: 1000)
        let scenario = try ScenarioParser.parse(yaml: yaml, file: "x.yaml")
        #expect(scenario.steps.count == 1000)
        #expect(scenario.steps.last?.line == 1002)
    }

    static let errorCases: [ParserErrorCase] = [
        // The file as a whole.
        ParserErrorCase(label: "empty file", yaml: "", line: 0, field: "name", code: .missingField, fragment: "the file is empty; a scenario needs"),
        ParserErrorCase(label: "only comments", yaml: "# soon\n", line: 0, field: "name", code: .missingField, fragment: "the file is empty"),
        ParserErrorCase(label: "a list instead of a scenario", yaml: "- profile: Edge\n", line: 1, field: "", code: .wrongType, fragment: "a scenario file must be a mapping"),
        ParserErrorCase(label: "YAML syntax error", yaml: "name: X\nsteps: [ { profile: Edge }\n", line: 3, field: "", code: .syntax, fragment: "YAML syntax error"),
        ParserErrorCase(label: "two documents", yaml: "name: X\n---\nname: Y\n", line: 2, field: "", code: .syntax, fragment: "a scenario file holds one document"),
        ParserErrorCase(label: "duplicate top-level key", yaml: "name: X\nsteps: []\nsteps: []\n", line: 2, field: "steps", code: .syntax, fragment: "appears more than once"),
        // Top-level fields.
        ParserErrorCase(label: "misspelt top-level field", yaml: "name: X\nstpes:\n  - profile: Edge\n", line: 2, field: "stpes", code: .unknownField, fragment: "did you mean 'steps'?"),
        ParserErrorCase(label: "unknown top-level field lists the allowed ones", yaml: "name: X\nprofile: Edge\n", line: 2, field: "profile", code: .unknownField, fragment: "allowed here: name, description, seed, repeat, loop, steps"),
        ParserErrorCase(label: "missing name", yaml: "description: d\nsteps: [{ profile: Edge }]\n", line: 1, field: "name", code: .missingField, fragment: "every scenario needs a display name"),
        ParserErrorCase(label: "empty name", yaml: "name: ''\nsteps: [{ profile: Edge }]\n", line: 1, field: "name", code: .badValue, fragment: "must not be empty"),
        ParserErrorCase(label: "name without letters or digits", yaml: "name: '🚇'\nsteps: [{ profile: Edge }]\n", line: 1, field: "name", code: .badValue, fragment: "must contain a letter or a digit"),
        ParserErrorCase(label: "description as a list", yaml: "name: X\ndescription:\n  - a\nsteps: [{ profile: Edge }]\n", line: 3, field: "description", code: .wrongType, fragment: "must be a single value"),
        ParserErrorCase(label: "negative seed", yaml: "name: X\nseed: -1\nsteps: [{ profile: Edge }]\n", line: 2, field: "seed", code: .badValue, fragment: "'-1' is not a whole number"),
        ParserErrorCase(label: "seed beyond 64 bits", yaml: "name: X\nseed: 18446744073709551616\nsteps: [{ profile: Edge }]\n", line: 2, field: "seed", code: .badValue, fragment: "out of range; it must be from 0 to 18446744073709551615"),
        ParserErrorCase(label: "seed as a word", yaml: "name: X\nsteps: [{ profile: Edge }]\nseed: random\n", line: 3, field: "seed", code: .badValue, fragment: "'random' is not a whole number"),
        ParserErrorCase(label: "decimal seed", yaml: "name: X\nseed: 1.5\nsteps: [{ profile: Edge }]\n", line: 2, field: "seed", code: .badValue, fragment: "not a whole number"),
        ParserErrorCase(label: "repeat 0", yaml: "name: X\nrepeat: 0\nsteps: [{ profile: Edge }]\n", line: 2, field: "repeat", code: .badValue, fragment: "it must be from 1 to 10000"),
        ParserErrorCase(label: "repeat 10001", yaml: "name: X\nrepeat: 10001\nsteps: [{ profile: Edge }]\n", line: 2, field: "repeat", code: .badValue, fragment: "it must be from 1 to 10000"),
        ParserErrorCase(label: "repeat as a word", yaml: "name: X\nrepeat: forever\nsteps: [{ profile: Edge }]\n", line: 2, field: "repeat", code: .badValue, fragment: "'forever' is not a whole number"),
        ParserErrorCase(label: "loop: yes", yaml: "name: X\nloop: yes\nsteps: [{ profile: Edge }]\n", line: 2, field: "loop", code: .badValue, fragment: "'yes' is not true or false"),
        ParserErrorCase(label: "loop as a mapping", yaml: "name: X\nloop: { times: 2 }\nsteps: [{ profile: Edge }]\n", line: 2, field: "loop", code: .wrongType, fragment: "must be a single value"),
        ParserErrorCase(label: "repeat and loop: the second one written is the error", yaml: "name: X\nrepeat: 3\nloop: true\nsteps: [{ profile: Edge }]\n", line: 3, field: "loop", code: .badValue, fragment: "cannot be given with repeat: (line 2)"),
        ParserErrorCase(label: "loop and repeat: the second one written is the error", yaml: "name: X\nloop: false\nsteps: [{ profile: Edge }]\nrepeat: 2\n", line: 4, field: "repeat", code: .badValue, fragment: "cannot be given with loop: (line 2)"),
        // The list of steps.
        ParserErrorCase(label: "missing steps", yaml: "name: X\ndescription: d\n", line: 1, field: "steps", code: .missingField, fragment: "a scenario needs a list of steps"),
        ParserErrorCase(label: "empty list of steps", yaml: "name: X\nsteps: []\n", line: 2, field: "steps", code: .badValue, fragment: "must hold at least one step"),
        ParserErrorCase(label: "steps with no value", yaml: "name: X\nsteps:\n", line: 2, field: "steps", code: .badValue, fragment: "must hold at least one step"),
        ParserErrorCase(label: "steps as a mapping", yaml: "name: X\nsteps:\n  profile: Edge\n", line: 3, field: "steps", code: .wrongType, fragment: "must be a list of steps"),
        ParserErrorCase(label: "steps as a word", yaml: "name: X\nsteps: Edge\n", line: 2, field: "steps", code: .wrongType, fragment: "must be a list of steps"),
        ParserErrorCase(label: "more than 1000 steps: located at the first one too many", yaml: "name: X\nsteps:\n" + String(repeating: "  - profile: Edge\n", count: 1001), line: 1003, field: "steps", code: .badValue, fragment: "at most 1000"),
        ParserErrorCase(label: "a step that is only a name", yaml: "name: X\nsteps:\n  - profile: Edge\n  - Slow Net\n", line: 4, field: "steps[2]", code: .wrongType, fragment: "each step must be a mapping of fields"),
        // Each step.
        ParserErrorCase(label: "misspelt step field", yaml: "name: X\nsteps:\n  - profile: Edge\n  - profile: Edge\n    util: next\n", line: 5, field: "steps[2].util", code: .unknownField, fragment: "did you mean 'until'?"),
        ParserErrorCase(label: "a direction's field on the step itself", yaml: "name: X\nsteps:\n  - profile: Edge\n    loss: 1%\n", line: 4, field: "steps[1].loss", code: .unknownField, fragment: "allowed here: label, profile, failure, downlink, uplink, dns, for, until, repeat, reset"),
        ParserErrorCase(label: "reset: yes", yaml: "name: X\nsteps:\n  - profile: Edge\n    reset: yes\n", line: 4, field: "steps[1].reset", code: .badValue, fragment: "'yes' is not true or false"),
        ParserErrorCase(label: "duplicate step field", yaml: "name: X\nsteps:\n  - profile: Edge\n    for: 1s\n    for: 2s\n", line: 4, field: "steps[1].for", code: .syntax, fragment: "appears more than once"),
        ParserErrorCase(label: "both a profile and values", yaml: "name: X\nsteps:\n  - profile: Edge\n  - profile: Edge\n    for: 1s\n    uplink: { loss: 1% }\n", line: 6, field: "steps[2]", code: .badValue, fragment: "has both profile: and its own values (uplink:)"),
        ParserErrorCase(label: "neither a profile nor values", yaml: "name: X\nsteps:\n  - profile: Edge\n  - label: Nothing\n    for: 1s\n", line: 4, field: "steps[2]", code: .missingField, fragment: "has neither a profile nor values"),
        ParserErrorCase(label: "an empty step", yaml: "name: X\nsteps:\n  - {}\n", line: 3, field: "steps[1]", code: .missingField, fragment: "has neither"),
        ParserErrorCase(label: "empty profile", yaml: "name: X\nsteps:\n  - profile: ''\n", line: 3, field: "steps[1].profile", code: .badValue, fragment: "must not be empty"),
        ParserErrorCase(label: "profile as a list", yaml: "name: X\nsteps:\n  - profile: [Edge, 3G]\n", line: 3, field: "steps[1].profile", code: .wrongType, fragment: "must be a single value"),
        ParserErrorCase(label: "empty label", yaml: "name: X\nsteps:\n  - profile: Edge\n    label: ''\n", line: 4, field: "steps[1].label", code: .badValue, fragment: "must not be empty"),
        ParserErrorCase(label: "step repeat 0", yaml: "name: X\nsteps:\n  - profile: Edge\n    repeat: 0\n", line: 4, field: "steps[1].repeat", code: .badValue, fragment: "from 1 to 10000"),
        ParserErrorCase(label: "step repeat too many", yaml: "name: X\nsteps:\n  - profile: Edge\n    repeat: 10001\n", line: 4, field: "steps[1].repeat", code: .badValue, fragment: "from 1 to 10000"),
        // Inline values, with their paths below the step.
        ParserErrorCase(label: "inline jitter above the delay", yaml: "name: X\nsteps:\n  - profile: Edge\n  - downlink:\n      delay: 10ms\n      jitter: 20ms\n", line: 6, field: "steps[2].downlink.jitter", code: .badValue, fragment: "jitter 20ms is larger than the delay 10ms"),
        ParserErrorCase(label: "inline unknown field", yaml: "name: X\nsteps:\n  - uplink: { bandwith: 1Mbit }\n", line: 3, field: "steps[1].uplink.bandwith", code: .unknownField, fragment: "did you mean 'bandwidth'?"),
        ParserErrorCase(label: "inline loss out of range", yaml: "name: X\nsteps:\n  - label: L\n    downlink:\n      loss: 120%\n", line: 5, field: "steps[1].downlink.loss", code: .badValue, fragment: "out of range"),
        ParserErrorCase(label: "inline DNS field", yaml: "name: X\nsteps:\n  - dns: { dealy: 1s }\n", line: 3, field: "steps[1].dns.dealy", code: .unknownField, fragment: "did you mean 'delay'?"),
        ParserErrorCase(label: "inline direction as a value", yaml: "name: X\nsteps:\n  - downlink: 1Mbit\n", line: 3, field: "steps[1].downlink", code: .wrongType, fragment: "must be a mapping of fields"),
        // Durations.
        ParserErrorCase(label: "duration without unit", yaml: oneStepYAML("profile: Edge\nfor: 20"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'20' has no unit"),
        ParserErrorCase(label: "duration in an unknown unit", yaml: oneStepYAML("profile: Edge\nfor: 2min"), line: 4, field: "steps[1].for", code: .badValue, fragment: "unknown time unit 'min' in '2min'; accepted units: ms, s, m (minutes), h (hours)"),
        ParserErrorCase(label: "microseconds are not a step's unit", yaml: oneStepYAML("profile: Edge\nfor: 500us"), line: 4, field: "steps[1].for", code: .badValue, fragment: "unknown time unit 'us'"),
        ParserErrorCase(label: "duration below 10ms", yaml: oneStepYAML("profile: Edge\nfor: 9ms"), line: 4, field: "steps[1].for", code: .badValue, fragment: "shorter than the shortest step, 10ms"),
        ParserErrorCase(label: "zero duration", yaml: oneStepYAML("profile: Edge\nfor: 0s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "shorter than the shortest step"),
        ParserErrorCase(label: "duration above a day", yaml: oneStepYAML("profile: Edge\nfor: 24.001h"), line: 4, field: "steps[1].for", code: .badValue, fragment: "longer than the longest step, a day (24h)"),
        ParserErrorCase(label: "negative duration", yaml: oneStepYAML("profile: Edge\nfor: -5s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'-5s' is negative"),
        ParserErrorCase(label: "duration finer than a millisecond", yaml: oneStepYAML("profile: Edge\nfor: 1.0005s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "finer than a millisecond"),
        ParserErrorCase(label: "duration as a word", yaml: oneStepYAML("profile: Edge\nfor: ever"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'ever' is not a duration"),
        ParserErrorCase(label: "empty duration", yaml: oneStepYAML("profile: Edge\nfor: ''"), line: 4, field: "steps[1].for", code: .badValue, fragment: "empty duration"),
        ParserErrorCase(label: "range upside down", yaml: oneStepYAML("profile: Edge\nfor: 8s..3s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "the first end of a range must be shorter than the second"),
        ParserErrorCase(label: "range of one value", yaml: oneStepYAML("profile: Edge\nfor: 5s..5000ms"), line: 4, field: "steps[1].for", code: .badValue, fragment: "for a fixed time write 5s"),
        ParserErrorCase(label: "range with one unit", yaml: oneStepYAML("profile: Edge\nfor: 3..8s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'3' has no unit; each end of a range takes its own"),
        ParserErrorCase(label: "range with three dots", yaml: oneStepYAML("profile: Edge\nfor: 3s...8s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "write a range with two"),
        ParserErrorCase(label: "range of three", yaml: oneStepYAML("profile: Edge\nfor: 1s..2s..3s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "is not a range"),
        ParserErrorCase(label: "range with an end too short", yaml: oneStepYAML("profile: Edge\nfor: 5ms..1s"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'5ms' is shorter than the shortest step"),
        ParserErrorCase(label: "range with an end too long", yaml: oneStepYAML("profile: Edge\nfor: 1s..25h"), line: 4, field: "steps[1].for", code: .badValue, fragment: "'25h' is longer than the longest step"),
        ParserErrorCase(label: "range with an empty end", yaml: oneStepYAML("profile: Edge\nfor: 1s.."), line: 4, field: "steps[1].for", code: .badValue, fragment: "empty duration"),
        ParserErrorCase(label: "duration as a list", yaml: oneStepYAML("profile: Edge\nfor: [1s, 2s]"), line: 4, field: "steps[1].for", code: .wrongType, fragment: "must be a single value"),
        // Triggers.
        ParserErrorCase(label: "until: next with a duration", yaml: "name: X\nsteps:\n  - profile: Edge\n    for: 5s\n    until: next\n", line: 5, field: "steps[1].until", code: .badValue, fragment: "a timed step also ends early by `linkcond next`"),
        ParserErrorCase(label: "trigger that is a single word", yaml: oneStepYAML("profile: Edge\nuntil: later"), line: 4, field: "steps[1].until", code: .badValue, fragment: "'later' is not a trigger; write next, or an amount of traffic"),
        ParserErrorCase(label: "trigger without a direction", yaml: oneStepYAML("profile: Edge\nuntil: 20KB"), line: 4, field: "steps[1].until", code: .badValue, fragment: "is not a trigger"),
        ParserErrorCase(label: "trigger in an unknown direction", yaml: oneStepYAML("profile: Edge\nuntil: 20KB of downlink"), line: 4, field: "steps[1].until", code: .badValue, fragment: "unknown direction 'downlink'"),
        ParserErrorCase(label: "trigger without a unit", yaml: oneStepYAML("profile: Edge\nuntil: 20 of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "'20' has no unit"),
        ParserErrorCase(label: "trigger in bits", yaml: oneStepYAML("profile: Edge\nuntil: 20kb of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "bytes are written with a capital B"),
        ParserErrorCase(label: "trigger in an unknown unit", yaml: oneStepYAML("profile: Edge\nuntil: 20 octets of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "unknown unit 'octets'"),
        ParserErrorCase(label: "trigger of nothing", yaml: oneStepYAML("profile: Edge\nuntil: 0 KB of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "at least 1 byte"),
        ParserErrorCase(label: "trigger of no packets", yaml: oneStepYAML("profile: Edge\nuntil: 0 packets of upload"), line: 4, field: "steps[1].until", code: .badValue, fragment: "at least 1 packet"),
        ParserErrorCase(label: "trigger of part of a byte", yaml: oneStepYAML("profile: Edge\nuntil: 1.0005 KB of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "not a whole number of bytes"),
        ParserErrorCase(label: "trigger of half a byte", yaml: oneStepYAML("profile: Edge\nuntil: 0.5 B of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "not a whole number of bytes"),
        ParserErrorCase(label: "trigger of part of a packet", yaml: oneStepYAML("profile: Edge\nuntil: 1.5 packets of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "not a whole number of packets"),
        ParserErrorCase(label: "negative trigger", yaml: oneStepYAML("profile: Edge\nuntil: -1 KB of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "negative"),
        ParserErrorCase(label: "trigger beyond any counter", yaml: oneStepYAML("profile: Edge\nuntil: 20000000000 GB of download"), line: 4, field: "steps[1].until", code: .badValue, fragment: "more than any counter holds"),
        ParserErrorCase(label: "trigger as a mapping", yaml: oneStepYAML("profile: Edge\nuntil: { download: 20KB }"), line: 4, field: "steps[1].until", code: .wrongType, fragment: "must be a single value"),
    ]

    @Test("refuses bad files naming line, field and code", arguments: errorCases)
    func refuses(_ testCase: ParserErrorCase) throws {
        let error = try #require(scenarioError(testCase.yaml, file: "scenarios/case.yaml"))
        #expect(error.code == testCase.code)
        #expect(error.line == testCase.line)
        #expect(error.field == testCase.field)
        #expect(error.file == "scenarios/case.yaml")
        #expect(error.message.contains(testCase.fragment), "message: \(error.message)")
    }

    @Test("the description reads file:line: field: message")
    func descriptionFormat() throws {
        let error = try #require(scenarioError("name: X\nsteps:\n  - profile: Edge\n    for: 20\n", file: "/etc/linkcond/scenarios/broken.yaml"))
        #expect(error.description == "/etc/linkcond/scenarios/broken.yaml:4: steps[1].for: '20' has no unit; write it like 20s, 500ms, 1.5s or 2m")
    }

    @Test("steps are numbered from 1 in the order written, whatever their style")
    func stepNumbers() throws {
        let yaml = "name: X\nsteps:\n  - { profile: A }\n  - profile: B\n  -\n    profile: C\n    for: 1\n"
        let error = try #require(scenarioError(yaml))
        #expect(error.field == "steps[3].for")
        #expect(error.line == 7)
    }

    @Test("unknown fields are checked before anything else in the file and in a step")
    func unknownFieldsFirst() throws {
        let top = try #require(scenarioError("nmae: X\n"))
        #expect(top.code == .unknownField)
        #expect(top.message.contains("did you mean 'name'?"))
        let step = try #require(scenarioError("name: X\nsteps:\n  - { fro: 1s }\n"))
        #expect(step.code == .unknownField)
        #expect(step.field == "steps[1].fro")
        #expect(step.message.contains("did you mean 'for'?"))
    }

    @Test("the first broken step is reported")
    func firstBrokenStep() throws {
        let error = try #require(scenarioError("name: X\nsteps:\n  - profile: A\n    for: 1\n  - profile: B\n    for: 2\n"))
        #expect(error.field == "steps[1].for")
        #expect(error.line == 4)
    }

    @Test("a value on the line after its key is located at the value")
    func valueOnNextLine() throws {
        let error = try #require(scenarioError("name: X\nsteps:\n  - profile: A\n    for:\n      20\n"))
        #expect(error.field == "steps[1].for")
        #expect(error.line == 5)
    }
}

@Suite("StepDuration and StepTrigger text")
struct StepTextTests {
    @Test("a parsed duration reads back as written", arguments: ["20s", "500ms", "1.5s", "2m", "3s..8s", "200ms..1.5s"])
    func durationRoundTrip(text: String) throws {
        #expect(try StepDuration(parsing: text).description == text)
    }

    @Test("the bounds of a duration")
    func durationBounds() throws {
        #expect(StepDuration.minimumMilliseconds == 10)
        #expect(try StepDuration(parsing: "3s..8s").shortestMilliseconds == 3_000)
        #expect(try StepDuration(parsing: "3s..8s").longestMilliseconds == 8_000)
        #expect(try StepDuration(parsing: "2m").shortestMilliseconds == 120_000)
        #expect(try StepDuration(parsing: "2m").longestMilliseconds == 120_000)
    }

    @Test("a parsed trigger reads back in the form it is shown", arguments: [
        ("20KB of download", "20 KB of download"),
        ("1.5MB of upload", "1.5 MB of upload"),
        ("300B of download", "300 B of download"),
        ("100 packets of upload", "100 packets of upload"),
    ])
    func triggerText(written: String, shown: String) throws {
        #expect(try StepTrigger(parsing: written).description == shown)
    }
}
