import Profiles
import Testing

/// One file that must be refused, and how.
struct ParserErrorCase: Sendable, CustomTestStringConvertible {
    var label: String
    var yaml: String
    var line: Int
    var field: String
    var code: ProfileError.Code
    /// Part of the message that makes it helpful.
    var fragment: String

    var testDescription: String { label }
}

@Suite("ProfileParser")
struct ProfileParserTests {
    @Test("reads a profile with every field set")
    func fullProfile() throws {
        let yaml = """
            name: Full Example
            description: Every field set.
            downlink:
              bandwidth: 1.5Mbit
              delay: 100ms
              jitter: 10ms
              loss: 0.5%
            uplink:
              bandwidth: 256kbit
              delay: 50ms
              jitter: 50ms
              loss: 1%
            dns:
              delay: 200ms
            """
        let profile = try ProfileParser.parse(yaml: yaml, file: "full.yaml")
        #expect(profile == Profile(
            name: "Full Example",
            description: "Every field set.",
            downlink: LinkConditions(bandwidth: .kbit(1_500), delay: .milliseconds(100), jitter: .milliseconds(10), loss: LossRate(percent: 0.5)),
            uplink: LinkConditions(bandwidth: .kbit(256), delay: .milliseconds(50), jitter: .milliseconds(50), loss: LossRate(percent: 1)),
            dnsDelay: .milliseconds(200)
        ))
    }

    @Test("flow mappings read the same as block mappings")
    func flowMappings() throws {
        let block = try ProfileParser.parse(yaml: "name: X\ndownlink:\n  bandwidth: 32kbit\n  delay: 100ms\n", file: "a.yaml")
        let flow = try ProfileParser.parse(yaml: "name: X\ndownlink: { bandwidth: 32kbit, delay: 100ms }\n", file: "b.yaml")
        #expect(block == flow)
        #expect(flow.downlink == LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)))
    }

    @Test("absent fields take their defaults: unshaped directions, no DNS delay, empty description")
    func defaults() throws {
        let profile = try ProfileParser.parse(yaml: "name: Minimal\n", file: "minimal.yaml")
        #expect(profile.name == "Minimal")
        #expect(profile.description == "")
        #expect(profile.downlink == .unshaped)
        #expect(profile.uplink == .unshaped)
        #expect(profile.dnsDelay == .zero)
    }

    @Test("absent fields within a direction take their defaults")
    func directionDefaults() throws {
        let profile = try ProfileParser.parse(yaml: "name: X\ndownlink: { delay: 5ms }\nuplink: {}\ndns: {}\n", file: "x.yaml")
        #expect(profile.downlink.bandwidth == nil)
        #expect(profile.downlink.delay == .milliseconds(5))
        #expect(profile.downlink.jitter == .zero)
        #expect(profile.downlink.loss == .none)
        #expect(profile.uplink.isUnshaped)
        #expect(profile.dnsDelay == .zero)
    }

    @Test("jitter equal to the delay is allowed")
    func jitterEqualToDelay() throws {
        let profile = try ProfileParser.parse(yaml: "name: X\nuplink: { delay: 20ms, jitter: 20ms }\n", file: "x.yaml")
        #expect(profile.uplink.jitter == .milliseconds(20))
    }

    @Test("the name is trimmed")
    func nameIsTrimmed() throws {
        #expect(try ProfileParser.parse(yaml: "name: \"  Slow Net  \"\n", file: "x.yaml").name == "Slow Net")
    }

    @Test("YAML 1.1 booleans, numbers and nulls stay text", arguments: [
        ("Off", "Off"), ("off", "off"), ("On", "On"), ("yes", "yes"), ("no", "no"), ("NO", "NO"),
        ("y", "y"), ("n", "n"), ("true", "true"), ("False", "False"),
        ("3G", "3G"), ("100", "100"), ("1.0", "1.0"), ("0x10", "0x10"), ("100% Loss", "100% Loss"),
    ])
    func scalarsStayText(written: String, name: String) throws {
        let profile = try ProfileParser.parse(yaml: "name: \(written)\ndescription: \(written)\n", file: "x.yaml")
        #expect(profile.name == name)
        #expect(profile.description == name)
    }

    static let errorCases: [ParserErrorCase] = [
        ParserErrorCase(
            label: "unknown top-level key lists the allowed ones",
            yaml: "name: X\nbandwith: 32kbit\n",
            line: 2, field: "bandwith", code: .unknownField,
            fragment: "allowed here: name, description, failure, downlink, uplink, dns"
        ),
        ParserErrorCase(
            label: "misspelt top-level key suggests the right one",
            yaml: "name: X\ndescripton: typo\n",
            line: 2, field: "descripton", code: .unknownField, fragment: "did you mean 'description'?"
        ),
        ParserErrorCase(
            label: "field names are case-sensitive",
            yaml: "Name: X\n",
            line: 1, field: "Name", code: .unknownField, fragment: "did you mean 'name'?"
        ),
        ParserErrorCase(
            label: "unknown nested key suggests bandwidth",
            yaml: "name: X\ndownlink:\n  bandwith: 32kbit\n",
            line: 3, field: "downlink.bandwith", code: .unknownField, fragment: "did you mean 'bandwidth'?"
        ),
        ParserErrorCase(
            label: "unknown uplink key lists the allowed ones",
            yaml: "name: X\ndescription: d\nuplink:\n  delay: 5ms\n  latency: 5ms\n",
            line: 5, field: "uplink.latency", code: .unknownField, fragment: "allowed here: bandwidth, trace, delay, jitter, loss"
        ),
        ParserErrorCase(
            label: "unknown dns key",
            yaml: "name: X\ndns:\n  dealy: 5ms\n",
            line: 3, field: "dns.dealy", code: .unknownField, fragment: "did you mean 'delay'?"
        ),
        ParserErrorCase(
            label: "the first unknown key by line is reported",
            yaml: "name: X\nzzz: 1\naaa: 2\n",
            line: 2, field: "zzz", code: .unknownField, fragment: "unknown field"
        ),
        ParserErrorCase(
            label: "loss above 100%",
            yaml: "name: X\ndownlink:\n  loss: 120%\n",
            line: 3, field: "downlink.loss", code: .badValue, fragment: "'120%' is out of range"
        ),
        ParserErrorCase(
            label: "loss without %",
            yaml: "name: X\nuplink:\n  loss: 0.9\n",
            line: 3, field: "uplink.loss", code: .badValue, fragment: "like 0.9%"
        ),
        ParserErrorCase(
            label: "negative delay",
            yaml: "name: X\ndownlink:\n  bandwidth: 1Mbit\nuplink:\n  delay: -5ms\n",
            line: 5, field: "uplink.delay", code: .badValue, fragment: "'-5ms' is negative"
        ),
        ParserErrorCase(
            label: "bad bandwidth unit",
            yaml: "name: X\ndownlink: { bandwidth: 32kb }\n",
            line: 2, field: "downlink.bandwidth", code: .badValue, fragment: "unknown bandwidth unit 'kb'"
        ),
        ParserErrorCase(
            label: "bandwidth without unit",
            yaml: "name: X\ndownlink:\n  bandwidth: 32\n",
            line: 3, field: "downlink.bandwidth", code: .badValue, fragment: "'32' has no unit"
        ),
        ParserErrorCase(
            label: "bad jitter unit",
            yaml: "name: X\ndownlink:\n  delay: 10ms\n  jitter: 5min\n",
            line: 4, field: "downlink.jitter", code: .badValue, fragment: "unknown time unit 'min'"
        ),
        ParserErrorCase(
            label: "bad DNS delay",
            yaml: "name: X\ndns:\n  delay: 61s\n",
            line: 3, field: "dns.delay", code: .badValue, fragment: "longer than the longest delay"
        ),
        ParserErrorCase(
            label: "missing name",
            yaml: "description: no name here\ndownlink: { delay: 5ms }\n",
            line: 1, field: "name", code: .missingField, fragment: "every profile needs a display name"
        ),
        ParserErrorCase(
            label: "missing name after comments points at the first field",
            yaml: "# a comment\n\ndescription: no name here\n",
            line: 3, field: "name", code: .missingField, fragment: "missing"
        ),
        ParserErrorCase(
            label: "empty quoted name",
            yaml: "description: d\nname: \"\"\n",
            line: 2, field: "name", code: .badValue, fragment: "must not be empty"
        ),
        ParserErrorCase(
            label: "name with no value",
            yaml: "name:\n",
            line: 1, field: "name", code: .badValue, fragment: "must not be empty"
        ),
        ParserErrorCase(
            label: "blank name",
            yaml: "name: \"   \"\n",
            line: 1, field: "name", code: .badValue, fragment: "must not be empty"
        ),
        ParserErrorCase(
            label: "empty file",
            yaml: "",
            line: 0, field: "name", code: .missingField, fragment: "the file is empty"
        ),
        ParserErrorCase(
            label: "file with only comments",
            yaml: "# nothing yet\n\n",
            line: 0, field: "name", code: .missingField, fragment: "the file is empty"
        ),
        ParserErrorCase(
            label: "mapping where the name should be",
            yaml: "name:\n  first: Slow\n",
            line: 2, field: "name", code: .wrongType, fragment: "must be a single value"
        ),
        ParserErrorCase(
            label: "list where a bandwidth should be",
            yaml: "name: X\ndownlink:\n  bandwidth:\n    - 1Mbit\n",
            line: 4, field: "downlink.bandwidth", code: .wrongType, fragment: "must be a single value"
        ),
        ParserErrorCase(
            label: "mapping where a description should be",
            yaml: "name: X\ndescription: { text: hi }\n",
            line: 2, field: "description", code: .wrongType, fragment: "must be a single value"
        ),
        ParserErrorCase(
            label: "scalar where the downlink mapping should be",
            yaml: "name: X\ndownlink: 32kbit\n",
            line: 2, field: "downlink", code: .wrongType, fragment: "must be a mapping of fields"
        ),
        ParserErrorCase(
            label: "list where the uplink mapping should be",
            yaml: "name: X\nuplink:\n  - delay: 5ms\n",
            line: 3, field: "uplink", code: .wrongType, fragment: "must be a mapping of fields"
        ),
        ParserErrorCase(
            label: "scalar where the dns mapping should be",
            yaml: "name: X\ndns: 200ms\n",
            line: 2, field: "dns", code: .wrongType, fragment: "must be a mapping of fields"
        ),
        ParserErrorCase(
            label: "a list instead of a profile",
            yaml: "- name: X\n",
            line: 1, field: "", code: .wrongType, fragment: "a profile file must be a mapping"
        ),
        ParserErrorCase(
            label: "plain text instead of a profile",
            yaml: "just some words\n",
            line: 1, field: "", code: .wrongType, fragment: "a profile file must be a mapping"
        ),
        ParserErrorCase(
            label: "a complex key",
            yaml: "? [a, b]\n: c\nname: X\n",
            line: 1, field: "", code: .wrongType, fragment: "field names must be plain words"
        ),
        ParserErrorCase(
            label: "jitter larger than the delay",
            yaml: "name: X\ndownlink:\n  delay: 10ms\n  jitter: 20ms\n",
            line: 4, field: "downlink.jitter", code: .badValue, fragment: "jitter 20ms is larger than the delay 10ms"
        ),
        ParserErrorCase(
            label: "jitter without a delay",
            yaml: "name: X\nuplink: { jitter: 5ms }\n",
            line: 2, field: "uplink.jitter", code: .badValue, fragment: "larger than the delay 0ms"
        ),
        ParserErrorCase(
            label: "unterminated quoted string",
            yaml: "name: X\ndescription: \"unterminated\n",
            line: 3, field: "", code: .syntax, fragment: "YAML syntax error: found unexpected end of stream"
        ),
        ParserErrorCase(
            label: "tab indentation",
            yaml: "name: X\ndownlink:\n\tdelay: 5ms\n",
            line: 3, field: "", code: .syntax, fragment: "YAML syntax error: found character that cannot start any token"
        ),
        ParserErrorCase(
            label: "a colon inside a plain value",
            yaml: "name: a: b\n",
            line: 1, field: "", code: .syntax, fragment: "YAML syntax error: mapping values are not allowed"
        ),
        ParserErrorCase(
            label: "unclosed flow mapping",
            yaml: "name: X\ndownlink: { bandwidth: 32kbit\nuplink: {}\n",
            line: 3, field: "", code: .syntax, fragment: "YAML syntax error: did not find expected ',' or '}'"
        ),
        ParserErrorCase(
            label: "two documents",
            yaml: "name: X\n---\nname: Y\n",
            line: 2, field: "", code: .syntax, fragment: "YAML syntax error"
        ),
        ParserErrorCase(
            label: "duplicate top-level key, located at its first occurrence",
            yaml: "name: A\ndescription: d\nname: B\n",
            line: 1, field: "name", code: .syntax, fragment: "appears more than once"
        ),
        ParserErrorCase(
            label: "duplicate key, quoted and plain",
            yaml: "name: A\n\"name\": B\n",
            line: 1, field: "name", code: .syntax, fragment: "appears more than once"
        ),
    ]

    @Test("refuses bad files naming line, field and code", arguments: errorCases)
    func refuses(_ testCase: ParserErrorCase) throws {
        let error = try #require(parseError(testCase.yaml, file: "profiles/case.yaml"))
        #expect(error.code == testCase.code)
        #expect(error.line == testCase.line)
        #expect(error.field == testCase.field)
        #expect(error.file == "profiles/case.yaml")
        #expect(error.message.contains(testCase.fragment), "message: \(error.message)")
    }

    @Test("the description reads file:line: field: message")
    func descriptionFormat() throws {
        let error = try #require(parseError("name: X\ndownlink:\n  loss: 120%\n", file: "/etc/linkcond/profiles/broken.yaml"))
        #expect(error.description == "/etc/linkcond/profiles/broken.yaml:3: downlink.loss: loss '120%' is out of range; it must be between 0% and 100%")
    }

    @Test("the description of a syntax error has no field")
    func syntaxDescriptionFormat() throws {
        let error = try #require(parseError("name: a: b\n", file: "x.yaml"))
        #expect(error.description == "x.yaml:1: YAML syntax error: mapping values are not allowed in this context")
    }

    @Test("the description of an empty file has no line")
    func emptyFileDescriptionFormat() throws {
        let error = try #require(parseError("", file: "empty.yaml"))
        #expect(error.description == "empty.yaml: name: the file is empty; a profile needs at least a name")
    }

    @Test("a value written on the line after its key is located at the value")
    func valueOnNextLine() throws {
        let error = try #require(parseError("name: X\ndownlink:\n  loss:\n    120%\n"))
        #expect(error.field == "downlink.loss")
        #expect(error.line == 4)
    }

    @Test("unknown fields are checked before the name, so a misspelt name is reported as such")
    func misspeltNameIsUnknownNotMissing() throws {
        let error = try #require(parseError("nmae: Slow Net\n"))
        #expect(error.code == .unknownField)
        #expect(error.field == "nmae")
        #expect(error.message.contains("did you mean 'name'?"))
    }

    @Test("a duplicate key inside a section is reported with its dotted path")
    func nestedDuplicateKey() throws {
        let error = try #require(parseError("name: A\ndownlink:\n  loss: 1%\n  loss: 2%\n"))
        #expect(error.code == .syntax)
        #expect(error.line == 3)
        #expect(error.message.contains("appears more than once"))
        #expect(error.field == "downlink.loss")
    }

    @Test("a duplicate key in a flow mapping is reported with its dotted path")
    func nestedFlowDuplicateKey() throws {
        let error = try #require(parseError("name: A\nuplink: { delay: 1ms, delay: 2ms }\n"))
        #expect(error.line == 2)
        #expect(error.field == "uplink.delay")
    }

    @Test("a duplicate top-level key has no section")
    func topLevelDuplicateKey() throws {
        let error = try #require(parseError("name: A\nname: B\n"))
        #expect(error.field == "name")
    }

    @Test("several unknown keys on one line: the first one written is reported, every time")
    func unknownKeysOnOneLineAreReportedInOrder() {
        let error = parseError("name: X\ndownlink: { speed: 1Mbit, lag: 5ms, foo: 1, bar: 2 }\n")
        #expect(error?.field == "downlink.speed")
    }
}

@Suite("Profile failures")
struct ProfileFailureTests {
    @Test("failure: offline or refuse, any case; absent is none; it is part of the summary and of the conditions")
    func failures() throws {
        let offline = try ProfileParser.parse(yaml: "name: X\nfailure: Offline\n", file: "x.yaml")
        #expect(offline.failure == .offline)
        #expect(offline.summary == "failure: offline; down: unshaped; up: unshaped")
        #expect(try ProfileParser.parse(yaml: "name: X\nfailure: refuse\ndownlink: { delay: 10ms }\n", file: "x.yaml").failure == .refuse)
        let plain = try ProfileParser.parse(yaml: "name: X\n", file: "x.yaml")
        #expect(plain.failure == nil)
        #expect(!plain.hasSameConditions(as: offline))
    }

    @Test("an unknown failure names the file, line, field and what is known")
    func unknownFailure() throws {
        let error = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\nfailure: airplane\n", file: "x.yaml") }
        #expect(error.line == 2 && error.field == "failure" && error.code == .badValue)
        #expect(error.message.contains("offline, refuse, link-down"))
        let list = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\nfailure: [offline]\n", file: "x.yaml") }
        #expect(list.code == .wrongType)
    }

    @Test("a scenario step's own values may fail connections too")
    func scenarioStep() throws {
        let scenario = try ScenarioParser.parse(yaml: "name: S\nsteps:\n  - failure: offline\n    for: 5s\n  - profile: Slow Net\n", file: "s.yaml")
        guard case .inline(let profile) = scenario.steps[0].profile else {
            Issue.record("the first step is not inline")
            return
        }
        #expect(profile.failure == .offline)
    }
}

@Suite("Profile DNS failures")
struct ProfileDNSFailureTests {
    @Test("dns: failure: nxdomain, servfail or timeout, for every name or those listed (lowercase, no final dot)")
    func dnsFailures() throws {
        let every = try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: NXDOMAIN\n", file: "x.yaml")
        #expect(every.dnsFailure == DNSFailure(kind: .nxdomain))
        #expect(every.summary == "down: unshaped; up: unshaped; dns: nxdomain")
        #expect(every.failureName == "dns-nxdomain")
        let listed = try ProfileParser.parse(yaml: "name: X\nfailure: refuse\ndns:\n  delay: 10ms\n  failure: timeout\n  names: [API.example.com., '*.cdn.example.com']\n", file: "x.yaml")
        #expect(listed.dnsFailure == DNSFailure(kind: .timeout, names: ["api.example.com", "*.cdn.example.com"]))
        #expect(listed.failureName == "refuse, dns-timeout")
        #expect(listed.summary.hasSuffix("dns: +10ms; dns: timeout for api.example.com, *.cdn.example.com"))
        #expect(try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: servfail\n  names: one.example\n", file: "x.yaml").dnsFailure?.names == ["one.example"])
        #expect(!every.hasSameConditions(as: try ProfileParser.parse(yaml: "name: X\n", file: "x.yaml")))
    }

    @Test("which names a list covers: exact names, and *. for the names below (not the name itself)")
    func covers() {
        let failure = DNSFailure(kind: .nxdomain, names: ["api.example.com", "*.cdn.example.com"])
        #expect(failure.covers("api.example.com"))
        #expect(!failure.covers("www.api.example.com"))
        #expect(failure.covers("a.b.cdn.example.com"))
        #expect(!failure.covers("cdn.example.com"))
        #expect(!failure.covers("xcdn.example.com"))
        #expect(DNSFailure(kind: .servfail).covers("anything.at.all"))
    }

    @Test("a bad DNS failure names the file, line and field")
    func badValues() throws {
        let kind = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: refused\n", file: "x.yaml") }
        #expect(kind.line == 3 && kind.field == "dns.failure" && kind.message.contains("nxdomain, servfail, timeout"))
        let name = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: nxdomain\n  names:\n    - ok.example\n    - bad..example\n", file: "x.yaml") }
        #expect(name.line == 6 && name.field == "dns.names[1]" && name.code == .badValue)
        let alone = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\ndns:\n  names: [a.example]\n", file: "x.yaml") }
        #expect(alone.field == "dns.names" && alone.message.contains("needs failure:"))
        let many = (0...DNSFailure.maximumNames).map { "n\($0).example" }.joined(separator: ", ")
        let tooMany = try #require(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: nxdomain\n  names: [\(many)]\n", file: "x.yaml") }
        #expect(tooMany.message.contains("at most \(DNSFailure.maximumNames)"))
        let long = String(repeating: "a", count: 64) + ".example"
        #expect(throws: ProfileError.self) { try ProfileParser.parse(yaml: "name: X\ndns:\n  failure: nxdomain\n  names: [\(long)]\n", file: "x.yaml") }
    }

    @Test("a scenario step's own dns: may fail lookups")
    func scenarioStep() throws {
        let scenario = try ScenarioParser.parse(yaml: "name: S\nsteps:\n  - dns: { failure: servfail }\n    for: 5s\n", file: "s.yaml")
        guard case .inline(let profile) = scenario.steps[0].profile else {
            Issue.record("the step is not inline")
            return
        }
        #expect(profile.dnsFailure?.kind == .servfail)
    }
}
