import Foundation
import Profiles
import Testing

/// One opportunity every millisecond for a second: 12 Mbit/s.
let constantTraceText = traceText(1...1_000)

/// The profile `yaml` read from `profiles/case.yaml` in a temporary directory that also holds
/// `files` (paths relative to it, e.g. `profiles/traces/x.trace`); `body` gets the directory
/// and the catalog loaded from `profiles/`.
func withProfileFiles<Result>(
    _ yaml: String, files: [String: String] = [:], _ body: (_ root: String, _ catalog: ProfileCatalog) throws -> Result
) throws -> Result {
    try withTemporaryDirectory { root in
        var all = files
        all["profiles/case.yaml"] = yaml
        for (path, contents) in all {
            let url = URL(fileURLWithPath: root).appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
        }
        return try body(root, ProfileCatalog.load(from: ["\(root)/profiles"]))
    }
}

@Suite("The trace field of a profile")
struct TraceFieldTests {
    @Test("a relative path is read from the profile's own directory, with delay, jitter, loss and impairments")
    func relativePath() throws {
        let yaml = """
            name: Recorded
            downlink:
              trace: traces/constant.trace
              delay: 40ms
              jitter: 10ms
              loss: 1%
              duplicate: 0.5%
              queue: 50ms
            uplink: { bandwidth: 1Mbit }
            """
        try withProfileFiles(yaml, files: ["profiles/traces/constant.trace": constantTraceText]) { root, catalog in
            #expect(catalog.problems.isEmpty, "\(catalog.problems)")
            let profile = try #require(catalog.entries.first?.profile)
            let trace = try #require(profile.downlink.trace)
            #expect(trace.name == "constant")
            #expect(trace.file == "\(root)/profiles/traces/constant.trace")
            #expect(trace.meanCapacity == .mbit(12))
            #expect(profile.downlink.bandwidth == nil)
            #expect(profile.downlink.delay == .milliseconds(40))
            #expect(profile.downlink.impairments.queue == .milliseconds(50))
            #expect(profile.uplink.trace == nil)
            #expect(profile.isTraceDriven)
            #expect(profile.downlink.summary == "trace constant (mean 12Mbit, peak 12Mbit) 40ms ±10ms 1% loss 0.5% duplicated queue 50ms")
            #expect(profile.summary == "down: trace constant (mean 12Mbit, peak 12Mbit) 40ms ±10ms 1% loss 0.5% duplicated queue 50ms; up: 1Mbit")
        }
    }

    @Test("an absolute path is read as it is, in either direction")
    func absolutePath() throws {
        try withTemporaryDirectory { elsewhere in
            try makeDirectory("recorded", in: elsewhere, files: ["lte.up": constantTraceText])
            let yaml = "name: Absolute\nuplink:\n  trace: \(elsewhere)/recorded/lte.up\n"
            try withProfileFiles(yaml) { _, catalog in
                #expect(catalog.problems.isEmpty, "\(catalog.problems)")
                let trace = try #require(catalog.entries.first?.profile.uplink.trace)
                #expect(trace.file == "\(elsewhere)/recorded/lte.up")
                #expect(trace.name == "lte")
            }
        }
    }

    @Test("a missing trace makes the profile a problem, on the field's line")
    func missingFile() throws {
        try withProfileFiles("name: Missing\ndownlink:\n  delay: 10ms\n  trace: gone.trace\n") { root, catalog in
            #expect(catalog.entries.isEmpty)
            let problem = try #require(catalog.problems.first)
            #expect(problem.code == .badValue)
            #expect(problem.line == 4)
            #expect(problem.field == "downlink.trace")
            #expect(problem.description == "\(root)/profiles/case.yaml:4: downlink.trace: \(root)/profiles/gone.trace: cannot read: No such file or directory")
        }
    }

    @Test("an invalid trace makes the profile a problem that names the trace's line too")
    func invalidTrace() throws {
        let bad = (1...16).map { "\($0)\n" }.joined() + "seventeen\n18\n"
        try withProfileFiles("name: Bad\nuplink: { trace: bad.trace }\n", files: ["profiles/bad.trace": bad]) { root, catalog in
            let problem = try #require(catalog.problems.first)
            #expect(problem.line == 2)
            #expect(problem.field == "uplink.trace")
            #expect(problem.description.hasPrefix("\(root)/profiles/case.yaml:2: uplink.trace: \(root)/profiles/bad.trace:17: 'seventeen' is not a whole number"))
        }
    }

    @Test("a trace excludes a bandwidth, reported on the trace's line whichever comes first")
    func excludesBandwidth() throws {
        let files = ["profiles/c.trace": constantTraceText]
        try withProfileFiles("name: Both\ndownlink:\n  bandwidth: 1Mbit\n  trace: c.trace\n", files: files) { root, catalog in
            let problem = try #require(catalog.problems.first)
            #expect(problem.description == "\(root)/profiles/case.yaml:4: downlink.trace: cannot be combined with bandwidth (line 3): the trace gives the rate, window by window; leave bandwidth out")
        }
        try withProfileFiles("name: Both\nuplink:\n  trace: c.trace\n  delay: 5ms\n  bandwidth: 1Mbit\n", files: files) { _, catalog in
            let problem = try #require(catalog.problems.first)
            #expect(problem.line == 3)
            #expect(problem.field == "uplink.trace")
            #expect(problem.message.contains("cannot be combined with bandwidth (line 5)"))
        }
    }

    @Test("a queue needs a bandwidth or a trace")
    func queueWithTrace() throws {
        try withProfileFiles("name: Queued\ndownlink: { trace: c.trace, queue: 100 packets }\n", files: ["profiles/c.trace": constantTraceText]) { _, catalog in
            #expect(catalog.problems.isEmpty, "\(catalog.problems)")
            #expect(catalog.entries.first?.profile.downlink.impairments.queue == .packets(100))
        }
        let error = try #require(parseError("name: X\ndownlink:\n  delay: 5ms\n  queue: 100 packets\n"))
        #expect(error.message == "a queue fills only behind a bandwidth limit or a trace; this direction has neither (add bandwidth:, e.g. bandwidth: 10Mbit, or trace:)")
    }

    @Test("a profile parsed from text, not from a directory, cannot name a trace")
    func refusedFromText() throws {
        let error = try #require(parseError("name: Sent\ndownlink:\n  trace: /etc/shadow\n", file: "command line"))
        #expect(error.line == 3)
        #expect(error.field == "downlink.trace")
        #expect(error.message.hasPrefix("only a profile or scenario file in a profile or scenario directory can name a trace"))
        #expect(!error.message.contains("root:"))
    }

    @Test("the field must name a file, as a single value")
    func emptyOrWrongType() throws {
        try withProfileFiles("name: Empty\ndownlink:\n  trace: ''\n") { _, catalog in
            let problem = try #require(catalog.problems.first)
            #expect(problem.line == 3)
            #expect(problem.message.hasPrefix("must name a trace file, e.g. trace: traces/subway.down"))
        }
        try withProfileFiles("name: List\ndownlink:\n  trace:\n    - a.trace\n") { _, catalog in
            let problem = try #require(catalog.problems.first)
            #expect(problem.code == .wrongType)
            #expect(problem.field == "downlink.trace")
        }
    }

    @Test("a misspelt field suggests trace")
    func misspelt() throws {
        let error = try #require(parseError("name: X\ndownlink:\n  trac: a.trace\n"))
        #expect(error.message.contains("did you mean 'trace'?"))
    }

    @Test("the same files load as equal profiles; a changed trace makes them differ")
    func equalityFollowsTheFile() throws {
        let yaml = "name: Recorded\ndownlink: { trace: c.trace }\n"
        try withProfileFiles(yaml, files: ["profiles/c.trace": constantTraceText]) { root, first in
            let again = ProfileCatalog.load(from: ["\(root)/profiles"])
            #expect(first.entries.first?.profile == again.entries.first?.profile)
            try Data("1\n2\n".utf8).write(to: URL(fileURLWithPath: "\(root)/profiles/c.trace"))
            let changed = ProfileCatalog.load(from: ["\(root)/profiles"])
            #expect(first.entries.first?.profile != changed.entries.first?.profile)
        }
    }

    @Test("the example in docs/profiles.md parses, beside the shipped traces, and its summary is quoted")
    func documentedExample() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/profiles.md"), encoding: .utf8)
        let section = try #require(text.range(of: "## Trace-driven links"))
        let rest = text[section.upperBound...]
        let start = try #require(rest.range(of: "```yaml\n"))
        let end = try #require(rest[start.upperBound...].range(of: "\n```"))
        let example = String(rest[start.upperBound..<end.lowerBound])
        // As if saved in traces/, beside the trace it names.
        let file = repositoryRoot.appendingPathComponent("traces/example.yaml").path
        let profile = try ProfileParser.parse(yaml: example, file: file, traces: .besideFile)
        #expect(profile.isTraceDriven)
        #expect(text.contains("`\(profile.downlink.summary)`"), "summary: \(profile.downlink.summary)")
    }
}

@Suite("The trace field of a scenario step")
struct ScenarioTraceTests {
    @Test("an inline step's trace is relative to the scenario file")
    func inlineStep() throws {
        try withTemporaryDirectory { root in
            let scenarios = try makeDirectory("scenarios", in: root, files: [
                "commute.yaml": "name: Commute\nsteps:\n  - label: Tunnel\n    downlink: { trace: traces/tunnel.down, delay: 30ms }\n    for: 10s\n",
            ])
            try makeDirectory("traces", in: scenarios, files: ["tunnel.down": constantTraceText])
            let catalog = ScenarioCatalog.load(from: [scenarios], profiles: ProfileCatalog())
            #expect(catalog.problems.isEmpty, "\(catalog.problems)")
            let step = try #require(catalog.entries.first?.scenario.steps.first)
            guard case .inline(let profile) = step.profile else {
                Issue.record("the step is not inline: \(step.profile)")
                return
            }
            #expect(profile.downlink.trace?.file == "\(scenarios)/traces/tunnel.down")
            #expect(profile.downlink.delay == .milliseconds(30))
        }
    }

    @Test("a step's missing trace is the scenario's problem, on the step's field")
    func missingInStep() throws {
        try withTemporaryDirectory { root in
            let scenarios = try makeDirectory("scenarios", in: root, files: [
                "commute.yaml": "name: Commute\nsteps:\n  - for: 1s\n    uplink:\n      trace: nowhere.up\n",
            ])
            let catalog = ScenarioCatalog.load(from: [scenarios], profiles: ProfileCatalog())
            let problem = try #require(catalog.problems.first)
            #expect(problem.line == 5)
            #expect(problem.field == "steps[1].uplink.trace")
            #expect(problem.message == "\(scenarios)/nowhere.up: cannot read: No such file or directory")
        }
    }

    @Test("a scenario parsed from text cannot name a trace")
    func refusedFromText() throws {
        let error = try #require(scenarioError(oneStepYAML("for: 1s\ndownlink: { trace: a.trace }")))
        #expect(error.field == "steps[1].downlink.trace")
        #expect(error.message.hasPrefix("only a profile or scenario file"))
    }
}
