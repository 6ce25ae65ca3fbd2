import Foundation
import Profiles
import Testing

/// A profile whose downlink holds `fields`, one per line from line 3 (`name` is line 1,
/// `downlink:` line 2).
func downlinkYAML(_ fields: String...) -> String {
    "name: X\ndownlink:\n" + fields.map { "  \($0)\n" }.joined()
}

/// The downlink of a profile whose downlink holds `fields`.
func downlink(_ fields: String...) throws -> LinkConditions {
    let yaml = "name: X\ndownlink:\n" + fields.map { "  \($0)\n" }.joined()
    return try ProfileParser.parse(yaml: yaml, file: "x.yaml").downlink
}

@Suite("ProfileParser: impairments of real links")
struct ImpairmentParserTests {
    // MARK: Each field, read right

    @Test("jitter-distribution names one of netem's four tables, in any case", arguments: [
        ("uniform", JitterDistribution.uniform), ("normal", .normal), ("pareto", .pareto), ("paretonormal", .paretoNormal),
        ("Normal", .normal), ("ParetoNormal", .paretoNormal),
    ])
    func jitterDistribution(written: String, distribution: JitterDistribution) throws {
        let conditions = try downlink("delay: 40ms", "jitter: 10ms", "jitter-distribution: \(written)")
        #expect(conditions.impairments.jitterDistribution == distribution)
        #expect(conditions.jitter == .milliseconds(10))
    }

    @Test("each percentage field reads into its own value, exactly", arguments: [
        "jitter-correlation", "loss-correlation", "duplicate", "duplicate-correlation",
        "corrupt", "corrupt-correlation", "reorder", "reorder-correlation",
    ])
    func percentageFields(field: String) throws {
        // Every field with what it needs, so that only `field` differs from the base.
        let needs = ["delay: 40ms", "jitter: 10ms", "loss: 1%", "duplicate: 1%", "corrupt: 1%", "reorder: 1%"]
        let base = try Self.impairments(field: nil, value: nil, needs: needs)
        let read = try Self.impairments(field: field, value: "0.0004%", needs: needs)
        var expected = base
        let value = LossRate(scaledPercent: 4_000_000)
        switch field {
        case "jitter-correlation": expected.jitterCorrelation = value
        case "loss-correlation": expected.lossCorrelation = value
        case "duplicate": expected.duplicate = value
        case "duplicate-correlation": expected.duplicateCorrelation = value
        case "corrupt": expected.corrupt = value
        case "corrupt-correlation": expected.corruptCorrelation = value
        case "reorder": expected.reorder = value
        case "reorder-correlation": expected.reorderCorrelation = value
        default: Issue.record("no such field \(field)")
        }
        #expect(read == expected)
    }

    /// The impairments of a downlink holding `needs` and `field: value`, the latter replacing
    /// a line of `needs` for the same field.
    static func impairments(field: String?, value: String?, needs: [String]) throws -> Impairments {
        var lines = needs.filter { field == nil || !$0.hasPrefix("\(field!):") }
        if let field, let value { lines.append("\(field): \(value)") }
        let yaml = "name: X\ndownlink:\n" + lines.map { "  \($0)\n" }.joined()
        return try ProfileParser.parse(yaml: yaml, file: "x.yaml").downlink.impairments
    }

    @Test("percentages read exactly as loss does", arguments: ["0%", "25%", "100%", "0.0004%", "7.5 %", "12.3456789012%", " 50% "])
    func percentagesAsLoss(written: String) throws {
        let conditions = try downlink("duplicate: \(written)")
        #expect(conditions.impairments.duplicate == (try LossRate(parsing: written)))
    }

    @Test("keep-order takes YAML's true and false", arguments: [
        ("true", true), ("True", true), ("TRUE", true), ("false", false), ("False", false), ("FALSE", false),
    ])
    func keepOrder(written: String, keepsOrder: Bool) throws {
        let conditions = try downlink("delay: 40ms", "jitter: 10ms", "keep-order: \(written)")
        #expect(conditions.impairments.keepsOrder == keepsOrder)
    }

    @Test("burst-loss reads an average and a mean burst length", arguments: [
        ("{ average: 2%, length: 4 }", LossRate(percent: 2), 4.0),
        ("{ average: 0.5%, length: 2.5 }", LossRate(percent: 0.5), 2.5),
        ("{ length: 4 packets, average: 2% }", LossRate(percent: 2), 4.0),
        ("{ average: 1%, length: 1 packet }", LossRate(percent: 1), 1.0),
        ("{ average: 1%, length: 1000 }", LossRate(percent: 1), 1000.0),
        ("{ average: 1%, length: 1.25 }", LossRate(percent: 1), 1.25),
    ])
    func burstLoss(written: String, average: LossRate, length: Double) throws {
        let conditions = try downlink("burst-loss: \(written)")
        #expect(conditions.impairments.burstLoss == BurstLoss(average: average, meanBurstPackets: length))
        #expect(conditions.loss == .none)
    }

    @Test("burst-loss as a block mapping")
    func burstLossBlock() throws {
        let conditions = try downlink("burst-loss:", "  average: 3%", "  length: 5")
        #expect(conditions.impairments.burstLoss == BurstLoss(average: LossRate(percent: 3), meanBurstPackets: 5))
    }

    @Test("the highest average a burst length allows is accepted: L / (L + 1)", arguments: [
        ("50%", "1"), ("66.66%", "2"), ("80%", "4"), ("90%", "9"), ("99.9%", "999"),
    ])
    func highestAverage(average: String, length: String) throws {
        let conditions = try downlink("burst-loss: { average: \(average), length: \(length) }")
        let burst = try #require(conditions.impairments.burstLoss)
        #expect(burst.enterProbability <= 1 + 1e-12)
    }

    @Test("queue takes packets, bytes or a time", arguments: [
        ("100 packets", QueueLimit.packets(100)), ("1 packet", .packets(1)), ("1000000 packets", .packets(1_000_000)),
        ("64KB", .bytes(64_000)), ("64kB", .bytes(64_000)), ("1.5MB", .bytes(1_500_000)), ("256KiB", .bytes(262_144)),
        ("1MiB", .bytes(1_048_576)), ("1514B", .bytes(1514)), ("1514 bytes", .bytes(1514)), ("1000MB", .bytes(1_000_000_000)),
        ("50ms", .milliseconds(50)), ("1ms", .milliseconds(1)), ("1.5s", .milliseconds(1_500)), ("60s", .milliseconds(60_000)),
        ("250 msec", .milliseconds(250)),
    ])
    func queue(written: String, limit: QueueLimit) throws {
        #expect(try QueueLimit(parsing: written) == limit)
        let conditions = try downlink("bandwidth: 10Mbit", "queue: \(written)")
        #expect(conditions.impairments.queue == limit)
    }

    @Test("queue values that are refused, and why", arguments: [
        ("100", "has no unit"),
        ("0 packets", "more than nothing"),
        ("-5 packets", "more than nothing"),
        ("1.5 packets", "not a whole number of packets"),
        ("1000001 packets", "largest queue, 1000000 packets"),
        ("1513B", "less than one full-size frame, 1514 B"),
        ("1KB", "less than one full-size frame"),
        ("1001MB", "largest queue, 1 GB"),
        ("1.0001KB", "not a whole number of bytes"),
        ("64kb", "capital B"),
        ("2Mb", "capital B"),
        ("0.5ms", "not a whole number of milliseconds"),
        ("61s", "longest queue, 60s"),
        ("500us", "whole milliseconds"),
        ("2GB", "more than the largest queue"), ("1TB", "unknown queue unit 'TB'"),
        ("big", "is not a queue size"),
    ])
    func queueRefused(written: String, fragment: String) throws {
        let error = try #require(unitError { () throws(UnitParseError) in try QueueLimit(parsing: written) })
        #expect(error.message.contains(fragment), "message: \(error.message)")
    }

    @Test("fields left out take the defaults: no impairments")
    func defaults() throws {
        let conditions = try downlink("bandwidth: 1Mbit", "delay: 10ms", "jitter: 5ms", "loss: 1%")
        #expect(conditions.impairments == Impairments())
        #expect(conditions.impairments.isNone)
    }

    @Test("values that change nothing are accepted without what they would need")
    func harmlessDefaults() throws {
        let conditions = try downlink(
            "jitter-distribution: uniform", "jitter-correlation: 0%", "keep-order: false", "loss-correlation: 0%",
            "duplicate-correlation: 0%", "corrupt-correlation: 0%", "reorder: 0%", "reorder-correlation: 0%"
        )
        #expect(conditions.isUnshaped)
        let burst = try downlink("loss: 0%", "burst-loss: { average: 2%, length: 4 }")
        #expect(burst.impairments.burstLoss != nil)
    }

    @Test("a correlation is allowed along with what it correlates")
    func correlationsWithTheirValues() throws {
        let conditions = try downlink(
            "delay: 20ms", "jitter: 5ms", "jitter-correlation: 25%", "loss: 1%", "loss-correlation: 25%",
            "duplicate: 1%", "duplicate-correlation: 25%", "corrupt: 1%", "corrupt-correlation: 25%",
            "reorder: 1%", "reorder-correlation: 25%"
        )
        let quarter = LossRate(percent: 25)
        #expect(conditions.impairments == Impairments(
            jitterCorrelation: quarter, lossCorrelation: quarter, duplicate: LossRate(percent: 1), duplicateCorrelation: quarter,
            corrupt: LossRate(percent: 1), corruptCorrelation: quarter, reorder: LossRate(percent: 1), reorderCorrelation: quarter
        ))
    }

    // MARK: A profile with all of them

    static let fullYAML = """
        name: Real Link
        description: Every impairment, split between the directions where two exclude each other.
        downlink:
          bandwidth: 10Mbit
          delay: 40ms
          jitter: 10ms
          jitter-distribution: normal
          jitter-correlation: 25%
          keep-order: true
          burst-loss: { average: 2%, length: 4 }
          duplicate: 0.5%
          duplicate-correlation: 10%
          corrupt: 0.1%
          corrupt-correlation: 5%
          queue: 50ms
        uplink:
          bandwidth: 2Mbit
          delay: 60ms
          jitter: 5ms
          jitter-distribution: paretonormal
          loss: 1%
          loss-correlation: 25%
          reorder: 5%
          reorder-correlation: 50%
          queue: 100 packets
        dns:
          delay: 100ms
        """

    @Test("reads a profile with every impairment")
    func fullProfile() throws {
        let profile = try ProfileParser.parse(yaml: Self.fullYAML, file: "real.yaml")
        #expect(profile == Profile(
            name: "Real Link",
            description: "Every impairment, split between the directions where two exclude each other.",
            downlink: LinkConditions(
                bandwidth: .mbit(10), delay: .milliseconds(40), jitter: .milliseconds(10),
                impairments: Impairments(
                    jitterDistribution: .normal, jitterCorrelation: LossRate(percent: 25), keepsOrder: true,
                    burstLoss: BurstLoss(average: LossRate(percent: 2), meanBurstPackets: 4),
                    duplicate: LossRate(percent: 0.5), duplicateCorrelation: LossRate(percent: 10),
                    corrupt: LossRate(percent: 0.1), corruptCorrelation: LossRate(percent: 5),
                    queue: .milliseconds(50)
                )
            ),
            uplink: LinkConditions(
                bandwidth: .mbit(2), delay: .milliseconds(60), jitter: .milliseconds(5), loss: LossRate(percent: 1),
                impairments: Impairments(
                    jitterDistribution: .paretoNormal, lossCorrelation: LossRate(percent: 25),
                    reorder: LossRate(percent: 5), reorderCorrelation: LossRate(percent: 50),
                    queue: .packets(100)
                )
            ),
            dnsDelay: .milliseconds(100)
        ))
        #expect(profile.summary == "down: 10Mbit 40ms ±10ms normal in order 2% burst loss (4 packets) 0.5% duplicated 0.1% corrupted queue 50ms; "
            + "up: 2Mbit 60ms ±5ms paretonormal 1% loss 5% reordered queue 100 packets; dns: +100ms")
    }

    @Test("a flow mapping reads the same as the block one")
    func fullProfileInFlowStyle() throws {
        let flow = """
            name: Real Link
            downlink: { bandwidth: 10Mbit, delay: 40ms, jitter: 10ms, jitter-distribution: normal, burst-loss: { average: 2%, length: 4 }, duplicate: 0.5%, queue: 50ms }
            """
        let block = """
            name: Real Link
            downlink:
              bandwidth: 10Mbit
              delay: 40ms
              jitter: 10ms
              jitter-distribution: normal
              burst-loss:
                average: 2%
                length: 4
              duplicate: 0.5%
              queue: 50ms
            """
        let fromFlow = try ProfileParser.parse(yaml: flow, file: "flow.yaml")
        #expect(fromFlow == (try ProfileParser.parse(yaml: block, file: "block.yaml")))
        #expect(fromFlow.downlink.summary == "10Mbit 40ms ±10ms normal 2% burst loss (4 packets) 0.5% duplicated queue 50ms")
    }

    @Test("a scenario step's own values take impairments too, and their errors carry the step's path")
    func scenarioStep() throws {
        let scenario = try ScenarioParser.parse(
            yaml: oneStepYAML("downlink: { delay: 20ms, reorder: 5%, burst-loss: { average: 1%, length: 3 } }\nfor: 1s"), file: "s.yaml"
        )
        guard case .inline(let profile) = scenario.steps[0].profile else {
            Issue.record("the step should carry its own values")
            return
        }
        #expect(profile.downlink == LinkConditions(
            delay: .milliseconds(20),
            impairments: Impairments(burstLoss: BurstLoss(average: LossRate(percent: 1), meanBurstPackets: 3), reorder: LossRate(percent: 5))
        ))

        let error = try #require(scenarioError(oneStepYAML("for: 1s\nuplink:\n  bandwidth: 1Mbit\n  reorder: 5%")))
        #expect(error.field == "steps[1].uplink.reorder")
        #expect(error.line == 6)
        #expect(error.code == .badValue)
        #expect(error.message.contains("with no delay nothing can overtake"))

        let nested = try #require(scenarioError(oneStepYAML("for: 1s\ndownlink: { burst-loss: { average: 2%, length: 0 } }")))
        #expect(nested.field == "steps[1].downlink.burst-loss.length")
        #expect(nested.line == 4)
    }

    @Test("the example profiles in docs/profiles.md parse")
    func documentedExamples() throws {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/profiles.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.range(of: "## Impairments of real links"))
        var examples: [String] = []
        var current: [String]?
        for line in text[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { break }
            if line == "```yaml" {
                current = []
            } else if line == "```", let lines = current {
                examples.append(lines.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(String(line))
            }
        }
        #expect(!examples.isEmpty)
        for example in examples {
            let profile = try ProfileParser.parse(yaml: example, file: "docs/profiles.md")
            #expect(!profile.downlink.impairments.isNone || !profile.uplink.impairments.isNone)
            // The summary the page quotes is the one linkcond prints.
            #expect(text.contains("`\(profile.downlink.summary)`"), "summary: \(profile.downlink.summary)")
        }
    }

    // MARK: Errors: one value

    static let valueErrors: [ParserErrorCase] = [
        ParserErrorCase(
            label: "unknown jitter distribution lists the four",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "jitter-distribution: gaussian"),
            line: 5, field: "downlink.jitter-distribution", code: .badValue,
            fragment: "unknown distribution 'gaussian'; choose uniform, normal, pareto or paretonormal"
        ),
        ParserErrorCase(
            label: "misspelt jitter distribution suggests the right one",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "jitter-distribution: pareto-normal"),
            line: 5, field: "downlink.jitter-distribution", code: .badValue, fragment: "did you mean 'paretonormal'?"
        ),
        ParserErrorCase(
            label: "a jitter distribution is a single value",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "jitter-distribution: [normal]"),
            line: 5, field: "downlink.jitter-distribution", code: .wrongType, fragment: "must be a single value"
        ),
        ParserErrorCase(
            label: "a correlation without %",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "jitter-correlation: 25"),
            line: 5, field: "downlink.jitter-correlation", code: .badValue, fragment: "write jitter correlation as a percentage, like 25%"
        ),
        ParserErrorCase(
            label: "a correlation above 100%",
            yaml: downlinkYAML("loss: 1%", "loss-correlation: 120%"),
            line: 4, field: "downlink.loss-correlation", code: .badValue, fragment: "loss correlation '120%' is out of range"
        ),
        ParserErrorCase(
            label: "a percentage in another unit",
            yaml: downlinkYAML("duplicate: 5pct"),
            line: 3, field: "downlink.duplicate", code: .badValue, fragment: "unknown unit 'pct' in '5pct'; write duplication as a percentage"
        ),
        ParserErrorCase(
            label: "duplication above 100%",
            yaml: downlinkYAML("duplicate: 101%"),
            line: 3, field: "downlink.duplicate", code: .badValue, fragment: "duplication '101%' is out of range"
        ),
        ParserErrorCase(
            label: "negative corruption",
            yaml: downlinkYAML("corrupt: -1%"),
            line: 3, field: "downlink.corrupt", code: .badValue, fragment: "corruption '-1%' is out of range"
        ),
        ParserErrorCase(
            label: "reordering finer than ten decimals",
            yaml: downlinkYAML("delay: 5ms", "reorder: 0.00000000001%"),
            line: 4, field: "downlink.reorder", code: .badValue, fragment: "reordering '0.00000000001%' has more than 10 decimals"
        ),
        ParserErrorCase(
            label: "a percentage that is not a number",
            yaml: downlinkYAML("corrupt: some"),
            line: 3, field: "downlink.corrupt", code: .badValue, fragment: "'some' is not a percentage"
        ),
        ParserErrorCase(
            label: "keep-order in YAML 1.1's words",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "keep-order: yes"),
            line: 5, field: "downlink.keep-order", code: .badValue, fragment: "'yes' is not true or false"
        ),
        ParserErrorCase(
            label: "queue without a unit",
            yaml: downlinkYAML("bandwidth: 1Mbit", "queue: 100"),
            line: 4, field: "downlink.queue", code: .badValue, fragment: "'100' has no unit"
        ),
        ParserErrorCase(
            label: "queue in bits",
            yaml: downlinkYAML("bandwidth: 1Mbit", "queue: 64kb"),
            line: 4, field: "downlink.queue", code: .badValue, fragment: "capital B"
        ),
        ParserErrorCase(
            label: "queue smaller than a frame",
            yaml: downlinkYAML("bandwidth: 1Mbit", "queue: 1KB"),
            line: 4, field: "downlink.queue", code: .badValue, fragment: "less than one full-size frame"
        ),
        ParserErrorCase(
            label: "queue time finer than a millisecond",
            yaml: downlinkYAML("bandwidth: 1Mbit", "queue: 2.5ms"),
            line: 4, field: "downlink.queue", code: .badValue, fragment: "not a whole number of milliseconds"
        ),
        ParserErrorCase(
            label: "burst-loss given as one value",
            yaml: downlinkYAML("burst-loss: 2%"),
            line: 3, field: "downlink.burst-loss", code: .wrongType, fragment: "must be a mapping of average and length"
        ),
        ParserErrorCase(
            label: "burst-loss without its length",
            yaml: downlinkYAML("delay: 5ms", "burst-loss: { average: 2% }"),
            line: 4, field: "downlink.burst-loss.length", code: .missingField, fragment: "how many packets are lost in a row"
        ),
        ParserErrorCase(
            label: "burst-loss without its average, located at burst-loss",
            yaml: downlinkYAML("burst-loss:", "  length: 4"),
            line: 3, field: "downlink.burst-loss.average", code: .missingField, fragment: "the share of packets lost"
        ),
        ParserErrorCase(
            label: "an empty burst-loss",
            yaml: downlinkYAML("burst-loss: {}"),
            line: 3, field: "downlink.burst-loss.average", code: .missingField, fragment: "missing"
        ),
        ParserErrorCase(
            label: "misspelt burst-loss sub-field",
            yaml: downlinkYAML("burst-loss: { average: 2%, lenght: 4 }"),
            line: 3, field: "downlink.burst-loss.lenght", code: .unknownField, fragment: "did you mean 'length'?"
        ),
        ParserErrorCase(
            label: "unknown burst-loss sub-field lists the two",
            yaml: downlinkYAML("burst-loss:", "  average: 2%", "  length: 4", "  gap: 10"),
            line: 6, field: "downlink.burst-loss.gap", code: .unknownField, fragment: "allowed here: average, length"
        ),
        ParserErrorCase(
            label: "burst average of 0%",
            yaml: downlinkYAML("burst-loss:", "  length: 4", "  average: 0%"),
            line: 5, field: "downlink.burst-loss.average", code: .badValue, fragment: "must be more than 0%"
        ),
        ParserErrorCase(
            label: "burst average of 100%",
            yaml: downlinkYAML("burst-loss: { average: 100%, length: 4 }"),
            line: 3, field: "downlink.burst-loss.average", code: .badValue, fragment: "must be less than 100%"
        ),
        ParserErrorCase(
            label: "burst average without %",
            yaml: downlinkYAML("burst-loss: { average: 2, length: 4 }"),
            line: 3, field: "downlink.burst-loss.average", code: .badValue, fragment: "write burst loss average as a percentage, like 2%"
        ),
        ParserErrorCase(
            label: "bursts shorter than a packet",
            yaml: downlinkYAML("burst-loss:", "  average: 2%", "  length: 0.5"),
            line: 5, field: "downlink.burst-loss.length", code: .badValue, fragment: "'0.5' is out of range; a burst is 1 to 1000 packets long"
        ),
        ParserErrorCase(
            label: "bursts longer than 1000 packets",
            yaml: downlinkYAML("burst-loss: { average: 2%, length: 1001 }"),
            line: 3, field: "downlink.burst-loss.length", code: .badValue, fragment: "out of range"
        ),
        ParserErrorCase(
            label: "negative bursts",
            yaml: downlinkYAML("burst-loss: { average: 2%, length: -4 }"),
            line: 3, field: "downlink.burst-loss.length", code: .badValue, fragment: "out of range"
        ),
        ParserErrorCase(
            label: "burst length in another unit",
            yaml: downlinkYAML("burst-loss: { average: 2%, length: 4ms }"),
            line: 3, field: "downlink.burst-loss.length", code: .badValue, fragment: "unknown unit 'ms' in '4ms'"
        ),
        ParserErrorCase(
            label: "burst length as a list",
            yaml: downlinkYAML("burst-loss: { average: 2%, length: [4] }"),
            line: 3, field: "downlink.burst-loss.length", code: .wrongType, fragment: "must be a single value"
        ),
        ParserErrorCase(
            label: "an average the bursts cannot produce",
            yaml: downlinkYAML("burst-loss:", "  average: 90%", "  length: 2"),
            line: 4, field: "downlink.burst-loss.average", code: .badValue,
            fragment: "an average of 90% with bursts of 2 packets would need bursts to begin more often than every packet: "
                + "bursts of 2 packets allow at most 66.66%, and 90% needs bursts of at least 9 packets"
        ),
        ParserErrorCase(
            label: "an average just above what the bursts allow",
            yaml: downlinkYAML("burst-loss: { average: 66.67%, length: 2 }"),
            line: 3, field: "downlink.burst-loss.average", code: .badValue, fragment: "allow at most 66.66%"
        ),
        ParserErrorCase(
            label: "an average above 50% with single-packet bursts",
            yaml: downlinkYAML("burst-loss: { average: 51%, length: 1 }"),
            line: 3, field: "downlink.burst-loss.average", code: .badValue, fragment: "allow at most 50%, and 51% needs bursts of at least 1.1 packets"
        ),
        ParserErrorCase(
            label: "of two bad values, the first written is reported",
            yaml: downlinkYAML("queue: lots", "duplicate: 200%"),
            line: 3, field: "downlink.queue", code: .badValue, fragment: "is not a queue size"
        ),
    ]

    @Test("refuses bad values naming line, field and code", arguments: valueErrors)
    func refusesValues(_ testCase: ParserErrorCase) throws {
        try Self.expectRefused(testCase)
    }

    // MARK: Errors: unknown fields

    static let unknownFields: [ParserErrorCase] = [
        ParserErrorCase(
            label: "a typo of a correlation suggests it, not the field it starts with",
            yaml: downlinkYAML("loss: 1%", "loss-corelation: 25%"),
            line: 4, field: "downlink.loss-corelation", code: .unknownField, fragment: "did you mean 'loss-correlation'?"
        ),
        ParserErrorCase(
            label: "a shortened field name suggests the whole one",
            yaml: downlinkYAML("jitter-dist: normal"),
            line: 3, field: "downlink.jitter-dist", code: .unknownField, fragment: "did you mean 'jitter-distribution'?"
        ),
        ParserErrorCase(
            label: "burst suggests burst-loss",
            yaml: downlinkYAML("burst: { average: 2%, length: 4 }"),
            line: 3, field: "downlink.burst", code: .unknownField, fragment: "did you mean 'burst-loss'?"
        ),
        ParserErrorCase(
            label: "an underscore for the dash",
            yaml: downlinkYAML("keep_order: true"),
            line: 3, field: "downlink.keep_order", code: .unknownField, fragment: "did you mean 'keep-order'?"
        ),
        ParserErrorCase(
            label: "duplication suggests duplicate",
            yaml: downlinkYAML("duplication: 1%"),
            line: 3, field: "downlink.duplication", code: .unknownField, fragment: "did you mean 'duplicate'?"
        ),
        ParserErrorCase(
            label: "a longer name suggests the field in it",
            yaml: downlinkYAML("queue-size: 100 packets"),
            line: 3, field: "downlink.queue-size", code: .unknownField, fragment: "did you mean 'queue'?"
        ),
        ParserErrorCase(
            label: "a name in several fields suggests none and lists them",
            yaml: downlinkYAML("correlation: 25%"),
            line: 3, field: "downlink.correlation", code: .unknownField,
            fragment: "allowed here: bandwidth, trace, delay, jitter, loss, jitter-distribution, jitter-correlation, keep-order, "
                + "loss-correlation, burst-loss, duplicate, duplicate-correlation, corrupt, corrupt-correlation, reorder, reorder-correlation, queue"
        ),
        ParserErrorCase(
            label: "netem's own word for corruption",
            yaml: downlinkYAML("corruption: 1%"),
            line: 3, field: "downlink.corruption", code: .unknownField, fragment: "did you mean 'corrupt'?"
        ),
    ]

    @Test("refuses unknown fields with a suggestion when one stands out", arguments: unknownFields)
    func refusesUnknownFields(_ testCase: ParserErrorCase) throws {
        try Self.expectRefused(testCase)
    }

    // MARK: Errors: combinations

    static let combinationErrors: [ParserErrorCase] = [
        ParserErrorCase(
            label: "a jitter distribution without jitter",
            yaml: downlinkYAML("delay: 20ms", "jitter-distribution: normal"),
            line: 4, field: "downlink.jitter-distribution", code: .badValue, fragment: "a distribution shapes the jitter; this direction has none"
        ),
        ParserErrorCase(
            label: "a jitter distribution with a jitter of 0",
            yaml: downlinkYAML("jitter-distribution: pareto", "delay: 20ms", "jitter: 0"),
            line: 3, field: "downlink.jitter-distribution", code: .badValue, fragment: "this direction has none"
        ),
        ParserErrorCase(
            label: "a jitter correlation without jitter",
            yaml: downlinkYAML("delay: 20ms", "jitter-correlation: 25%"),
            line: 4, field: "downlink.jitter-correlation", code: .badValue, fragment: "this direction has no jitter"
        ),
        ParserErrorCase(
            label: "keep-order without jitter",
            yaml: downlinkYAML("delay: 20ms", "keep-order: true"),
            line: 4, field: "downlink.keep-order", code: .badValue, fragment: "changes nothing without jitter"
        ),
        ParserErrorCase(
            label: "keep-order with reorder",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "reorder: 5%", "keep-order: true"),
            line: 6, field: "downlink.keep-order", code: .badValue, fragment: "cannot be combined with reorder (line 5)"
        ),
        ParserErrorCase(
            label: "keep-order with reorder written after it: still reported at keep-order",
            yaml: downlinkYAML("delay: 20ms", "jitter: 5ms", "keep-order: true", "reorder: 5%"),
            line: 5, field: "downlink.keep-order", code: .badValue, fragment: "cannot be combined with reorder (line 6)"
        ),
        ParserErrorCase(
            label: "a loss correlation without loss",
            yaml: downlinkYAML("loss-correlation: 25%"),
            line: 3, field: "downlink.loss-correlation", code: .badValue, fragment: "this direction has no loss"
        ),
        ParserErrorCase(
            label: "burst-loss with loss",
            yaml: downlinkYAML("loss: 1%", "burst-loss: { average: 2%, length: 4 }"),
            line: 4, field: "downlink.burst-loss", code: .badValue, fragment: "burst-loss replaces loss (line 3)"
        ),
        ParserErrorCase(
            label: "burst-loss with loss written after it",
            yaml: downlinkYAML("burst-loss:", "  average: 2%", "  length: 4", "loss: 1%"),
            line: 3, field: "downlink.burst-loss", code: .badValue, fragment: "burst-loss replaces loss (line 6)"
        ),
        ParserErrorCase(
            label: "burst-loss with a loss correlation",
            yaml: downlinkYAML("loss-correlation: 25%", "burst-loss: { average: 2%, length: 4 }"),
            line: 4, field: "downlink.burst-loss", code: .badValue, fragment: "burst-loss replaces loss-correlation (line 3)"
        ),
        ParserErrorCase(
            label: "a duplicate correlation without duplication",
            yaml: downlinkYAML("duplicate-correlation: 25%"),
            line: 3, field: "downlink.duplicate-correlation", code: .badValue, fragment: "this direction duplicates nothing"
        ),
        ParserErrorCase(
            label: "a corrupt correlation without corruption",
            yaml: downlinkYAML("corrupt: 0%", "corrupt-correlation: 25%"),
            line: 4, field: "downlink.corrupt-correlation", code: .badValue, fragment: "this direction corrupts nothing"
        ),
        ParserErrorCase(
            label: "reorder without delay",
            yaml: downlinkYAML("bandwidth: 1Mbit", "reorder: 5%"),
            line: 4, field: "downlink.reorder", code: .badValue,
            fragment: "a reordered packet skips the delay to overtake the ones before it; with no delay nothing can overtake"
        ),
        ParserErrorCase(
            label: "a reorder correlation without reordering",
            yaml: downlinkYAML("delay: 20ms", "reorder-correlation: 25%"),
            line: 4, field: "downlink.reorder-correlation", code: .badValue, fragment: "this direction reorders nothing"
        ),
        ParserErrorCase(
            label: "queue without bandwidth",
            yaml: "name: X\nuplink:\n  delay: 20ms\n  queue: 100 packets\n",
            line: 4, field: "uplink.queue", code: .badValue, fragment: "a queue fills only behind a bandwidth limit"
        ),
        ParserErrorCase(
            label: "of two problems, the one on the first line is reported",
            yaml: downlinkYAML("queue: 50ms", "reorder: 5%"),
            line: 3, field: "downlink.queue", code: .badValue, fragment: "bandwidth limit"
        ),
        ParserErrorCase(
            label: "jitter above the delay is still reported on the jitter's line",
            yaml: downlinkYAML("bandwidth: 1Mbit", "queue: 10ms", "delay: 10ms", "jitter: 20ms"),
            line: 6, field: "downlink.jitter", code: .badValue, fragment: "jitter 20ms is larger than the delay 10ms"
        ),
        ParserErrorCase(
            label: "a value error comes before a combination error",
            yaml: downlinkYAML("reorder: 5%", "delay: 5 parsecs"),
            line: 4, field: "downlink.delay", code: .badValue, fragment: "unknown time unit"
        ),
    ]

    @Test("refuses values that need another or exclude one, on the line of the field that does", arguments: combinationErrors)
    func refusesCombinations(_ testCase: ParserErrorCase) throws {
        try Self.expectRefused(testCase)
    }

    static func expectRefused(_ testCase: ParserErrorCase) throws {
        let error = try #require(parseError(testCase.yaml, file: "profiles/case.yaml"))
        #expect(error.code == testCase.code)
        #expect(error.line == testCase.line)
        #expect(error.field == testCase.field)
        #expect(error.file == "profiles/case.yaml")
        #expect(error.message.contains(testCase.fragment), "message: \(error.message)")
    }

    @Test("the description of a combination error reads file:line: field: message")
    func combinationDescription() throws {
        let error = try #require(parseError(downlinkYAML("queue: 100 packets"), file: "/etc/linkcond/profiles/q.yaml"))
        #expect(error.description == "/etc/linkcond/profiles/q.yaml:3: downlink.queue: a queue fills only behind a bandwidth limit or a trace; this direction has neither (add bandwidth:, e.g. bandwidth: 10Mbit, or trace:)")
    }
}
