import LinkCondVocabulary

/// Reads one scenario file.
///
/// Like `ProfileParser`, it walks the YAML node tree so that every error names its line, and
/// reads a step's own values exactly as a profile file's. Field paths in errors name a step by
/// its 1-based position in `steps`: `steps[2].for`, `steps[3].downlink.loss`.
///
/// Named profiles are not looked up here: `ScenarioCatalog` checks them against the profiles
/// it is given.
public enum ScenarioParser {
    /// The fields a scenario file may contain, and those each step may contain.
    static let topLevelFields = ["name", "description", "seed", "repeat", "loop", "steps"]
    static let stepFields = ["label", "profile", "failure", "downlink", "uplink", "dns", "for", "until", "repeat", "reset", "handover"]
    /// A step's own values: any of these makes it an inline step.
    static let inlineFields = ["failure", "downlink", "uplink", "dns"]

    /// More steps than this are refused: a list that long is generated, not written, and a
    /// mistake more often than not.
    public static let maximumSteps = 1000
    /// The largest `repeat:`, of the whole list or of one step.
    public static let maximumRepeat = 10_000

    /// Parses `yaml`, naming `file` in errors. An inline step's `trace:` reads its file, relative
    /// to this scenario file's directory, only with `traces: .besideFile` (see `ProfileParser`).
    public static func parse(yaml: String, file: String, traces: TraceFileAccess = .refused) throws(ProfileError) -> Scenario {
        let composed: YAMLNode?
        do {
            composed = try YAMLComposer.compose(yaml, kind: "scenario")
        } catch {
            throw ProfileError(code: .syntax, file: file, line: error.line, field: "", message: "YAML syntax error: \(error.problem)")
        }
        guard let root = composed else {
            throw ProfileError(code: .missingField, file: file, line: 0, field: "name", message: "the file is empty; a scenario needs at least a name and steps")
        }

        let document = try YAMLSection(
            node: root, path: "", file: file, notAMapping: "a scenario file must be a mapping of fields (name:, steps:, ...)"
        )
        try document.rejectUnknownFields(allowed: topLevelFields)

        let name = try document.displayName(kind: "scenario", example: "Slow Net, then Black Hole", documentLine: root.line)
        var description = ""
        if let descriptionNode = document.fields["description"] {
            description = try document.scalar(descriptionNode, field: "description")
        }
        let seed = try wholeNumber("seed", in: document, range: 0...UInt64.max)
        let repeatCount = try wholeNumber("repeat", in: document, range: 1...UInt64(maximumRepeat))
        let loops = try boolean("loop", in: document)
        if repeatCount != nil, loops != nil {
            try rejectRepeatWithLoop(document)
        }

        guard let stepsNode = document.fields["steps"] else {
            throw ProfileError(
                code: .missingField, file: file, line: root.line, field: "steps",
                message: "missing; a scenario needs a list of steps, e.g. steps: [{ profile: Slow Net, for: 20s }]"
            )
        }
        let items = try stepNodes(stepsNode, file: file)
        var steps: [ScenarioStep] = []
        for (offset, item) in items.enumerated() {
            steps.append(try step(item, number: offset + 1, scenarioName: name, file: file, traces: traces))
        }

        return Scenario(
            name: name, description: description, steps: steps, repeatCount: repeatCount.map { Int($0) } ?? 1,
            loops: loops ?? false, seed: seed
        )
    }

    /// The items of `steps:`: a non-empty sequence of at most `maximumSteps`.
    private static func stepNodes(_ node: YAMLNode, file: String) throws(ProfileError) -> [YAMLNode] {
        switch node {
        case .sequence(let items, let line):
            guard !items.isEmpty else {
                throw ProfileError(code: .badValue, file: file, line: line, field: "steps", message: "must hold at least one step")
            }
            guard items.count <= maximumSteps else {
                throw ProfileError(
                    code: .badValue, file: file, line: items[maximumSteps].line, field: "steps",
                    message: "holds \(items.count) steps; a scenario has at most \(maximumSteps) (use repeat: to play steps again)"
                )
            }
            return items
        case .scalar("", let line):
            throw ProfileError(code: .badValue, file: file, line: line, field: "steps", message: "must hold at least one step")
        default:
            throw ProfileError(
                code: .wrongType, file: file, line: node.line, field: "steps",
                message: "must be a list of steps, each starting with '- ', e.g. - profile: Slow Net"
            )
        }
    }

    /// Step `number` (1-based) of the list.
    private static func step(
        _ node: YAMLNode, number: Int, scenarioName: String, file: String, traces: TraceFileAccess
    ) throws(ProfileError) -> ScenarioStep {
        let path = "steps[\(number)]"
        let section = try YAMLSection(
            node: node, path: path, file: file,
            notAMapping: "each step must be a mapping of fields, e.g. - profile: Slow Net"
        )
        try section.rejectUnknownFields(allowed: stepFields)

        var label: String?
        if let labelNode = section.fields["label"] {
            let text = try section.scalar(labelNode, field: "label").trimmingSpaces()
            guard !text.isEmpty else {
                throw ProfileError(code: .badValue, file: file, line: labelNode.line, field: section.dotted("label"), message: "must not be empty (leave it out for the profile's name)")
            }
            label = text
        }

        let inline = section.keys.filter { inlineFields.contains($0.name) }
        let profile: ScenarioStep.ProfileReference
        if let profileNode = section.fields["profile"] {
            if let first = inline.first {
                throw ProfileError(
                    code: .badValue, file: file, line: section.fields[first.name]?.line ?? node.line, field: path,
                    message: "has both profile: and its own values (\(first.name):); a step plays either a profile by name or the values written in it, not both"
                )
            }
            let name = try section.scalar(profileNode, field: "profile").trimmingSpaces()
            guard !name.isEmpty else {
                throw ProfileError(code: .badValue, file: file, line: profileNode.line, field: section.dotted("profile"), message: "must not be empty; name a profile, e.g. profile: Slow Net")
            }
            profile = .named(name)
        } else if !inline.isEmpty {
            let dns = try ProfileParser.dns(section.fields["dns"], path: section.dotted("dns"), file: file)
            profile = .inline(Profile(
                name: label ?? "\(scenarioName), step \(number)",
                downlink: try ProfileParser.conditions(section.fields["downlink"], path: section.dotted("downlink"), file: file, traces: traces),
                uplink: try ProfileParser.conditions(section.fields["uplink"], path: section.dotted("uplink"), file: file, traces: traces),
                dnsDelay: dns.delay,
                failure: try ProfileParser.failure(of: section),
                dnsFailure: dns.failure
            ))
        } else {
            throw ProfileError(
                code: .missingField, file: file, line: node.line, field: path,
                message: "has neither a profile nor values; name one (profile: Slow Net) or give the step's own failure:, downlink:, uplink: or dns:"
            )
        }

        let duration: StepDuration? = try section.value("for", default: nil) { text throws(UnitParseError) in
            try StepDuration(parsing: text)
        }

        var trigger: StepTrigger?
        if let untilNode = section.fields["until"] {
            let text = try section.scalar(untilNode, field: "until")
            if text.trimmingSpaces().lowercased() == "next" {
                if let forNode = section.fields["for"] {
                    throw ProfileError(
                        code: .badValue, file: file, line: untilNode.line, field: section.dotted("until"),
                        message: "'next' cannot be combined with for: (line \(forNode.line)); a timed step also ends early by `linkcond next`, so leave until: out"
                    )
                }
            } else {
                trigger = try section.value("until", default: nil) { text throws(UnitParseError) in
                    try StepTrigger(parsing: text)
                }
            }
        }

        let repeatCount = try wholeNumber("repeat", in: section, range: 1...UInt64(maximumRepeat))

        return ScenarioStep(
            label: label, profile: profile, duration: duration, trigger: trigger,
            repeatCount: repeatCount.map { Int($0) } ?? 1, resetsConnections: try boolean("reset", in: section) ?? false,
            handsOver: try boolean("handover", in: section) ?? false, line: node.line
        )
    }

    /// A whole number written in decimal digits, within `range`; `nil` when absent.
    private static func wholeNumber(_ field: String, in section: YAMLSection, range: ClosedRange<UInt64>) throws(ProfileError) -> UInt64? {
        guard let node = section.fields[field] else { return nil }
        let text = try section.scalar(node, field: field).trimmingSpaces()
        let bounds = "from \(range.lowerBound) to \(range.upperBound)"
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw ProfileError(
                code: .badValue, file: section.file, line: node.line, field: section.dotted(field),
                message: "'\(text)' is not a whole number; write it like \(field): \(max(range.lowerBound, 1)) (\(bounds))"
            )
        }
        guard let value = UInt64(text), range.contains(value) else {
            throw ProfileError(code: .badValue, file: section.file, line: node.line, field: section.dotted(field), message: "'\(text)' is out of range; it must be \(bounds)")
        }
        return value
    }

    /// `true` or `false` (also `True`, `TRUE`, `False`, `FALSE`, as YAML 1.2 writes them);
    /// `nil` when absent.
    private static func boolean(_ field: String, in section: YAMLSection) throws(ProfileError) -> Bool? {
        guard let node = section.fields[field] else { return nil }
        let text = try section.scalar(node, field: field).trimmingSpaces()
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            throw ProfileError(code: .badValue, file: section.file, line: node.line, field: section.dotted(field), message: "'\(text)' is not true or false")
        }
    }

    /// `repeat:` and `loop:` both given: the one written second is the error.
    private static func rejectRepeatWithLoop(_ document: YAMLSection) throws(ProfileError) {
        let written = document.keys.filter { $0.name == "repeat" || $0.name == "loop" }
        guard written.count == 2, let second = document.fields[written[1].name] else { return }
        let first = written[0]
        throw ProfileError(
            code: .badValue, file: document.file, line: second.line, field: written[1].name,
            message: "cannot be given with \(first.name): (line \(document.fields[first.name]?.line ?? first.line)); "
                + "loop: true plays the steps until stopped, repeat: N a number of times: keep one"
        )
    }
}

extension StepDuration {
    /// The shortest step: shorter is below what the daemon can time and the kernel apply.
    public static let minimumMilliseconds: Int64 = 10

    /// Reads a fixed duration (`20s`, `500ms`, `1.5s`, `2m`, `1h`) or a range of them
    /// (`3s..8s`), each from 10 ms to a day, to the millisecond.
    public init(parsing text: String) throws(UnitParseError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.contains("...") else {
            throw UnitParseError("'\(text)' has three dots; write a range with two, like 3s..8s")
        }
        guard let dots = trimmed.firstRange(of: "..") else {
            self = .fixed(milliseconds: try Self.milliseconds(parsing: trimmed))
            return
        }
        let lowerText = String(trimmed[..<dots.lowerBound])
        let upperText = String(trimmed[dots.upperBound...])
        guard !upperText.contains("..") else {
            throw UnitParseError("'\(text)' is not a range; write it like 3s..8s")
        }
        for end in [lowerText, upperText] {
            if let quantity = try? QuantityText(end, kind: "duration", example: "3s..8s"), quantity.unit.isEmpty {
                throw UnitParseError("'\(end.trimmingSpaces())' has no unit; each end of a range takes its own, like 3s..8s")
            }
        }
        let lower = try Self.milliseconds(parsing: lowerText)
        let upper = try Self.milliseconds(parsing: upperText)
        guard lower < upper else {
            throw UnitParseError(
                "'\(trimmed)': the first end of a range must be shorter than the second"
                    + (lower == upper ? "; for a fixed time write \(lowerText.trimmingSpaces())" : "")
            )
        }
        self = .range(milliseconds: lower...upper)
    }

    private static let units: [(suffix: String, factor: UInt64)] = [
        ("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000),
    ]

    /// One duration, `20s` or `1.5s`, in milliseconds, within the bounds of a step.
    public static func milliseconds(parsing text: String) throws(UnitParseError) -> Int64 {
        let example = "20s, 500ms, 1.5s or 2m"
        let quantity = try QuantityText(text, kind: "duration", example: example)
        let number = quantity.number
        guard !number.isNegative || number.isZero else {
            throw UnitParseError("'\(text.trimmingSpaces())' is negative; a step lasts \(StepDuration.text(minimumMilliseconds)) or more")
        }
        guard !quantity.unit.isEmpty else {
            throw UnitParseError("'\(text.trimmingSpaces())' has no unit; write it like \(example)")
        }
        let unit = quantity.unit.lowercased()
        guard let factor = units.first(where: { $0.suffix == unit })?.factor else {
            throw UnitParseError("unknown time unit '\(quantity.unit)' in '\(text.trimmingSpaces())'; accepted units: ms, s, m (minutes), h (hours)")
        }
        guard !number.isFiner(thanFactor: factor) else {
            throw UnitParseError("'\(text.trimmingSpaces())' is finer than a millisecond")
        }
        guard let milliseconds = number.scaled(by: factor, limit: UInt64(maximumMilliseconds)) else {
            throw UnitParseError("'\(text.trimmingSpaces())' is longer than the longest step, a day (24h)")
        }
        guard Int64(milliseconds) >= minimumMilliseconds else {
            throw UnitParseError("'\(text.trimmingSpaces())' is shorter than the shortest step, \(StepDuration.text(minimumMilliseconds))")
        }
        return Int64(milliseconds)
    }

    /// The shortest time the step can last, in milliseconds.
    public var shortestMilliseconds: Int64 {
        switch self {
        case .fixed(let milliseconds): milliseconds
        case .range(let range): range.lowerBound
        }
    }

    /// The longest time the step can last, in milliseconds.
    public var longestMilliseconds: Int64 {
        switch self {
        case .fixed(let milliseconds): milliseconds
        case .range(let range): range.upperBound
        }
    }
}

extension StepTrigger {
    /// Reads `<amount> of download` or `<amount> of upload`, the amount in bytes (`20KB`,
    /// `1.5 MB`, `64KiB`, `300 B`) or packets (`100 packets`, `1 packet`).
    public init(parsing text: String) throws(UnitParseError) {
        let shape = "write next, or an amount of traffic and its direction, like 20KB of download or 100 packets of upload"
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 3, words[words.count - 2].lowercased() == "of" else {
            throw UnitParseError("'\(text.trimmingSpaces())' is not a trigger; \(shape)")
        }
        let directionWord = words[words.count - 1].lowercased()
        guard let direction = Direction(rawValue: directionWord) else {
            throw UnitParseError(
                "unknown direction '\(words[words.count - 1])' in '\(text.trimmingSpaces())'; write download (traffic arriving) or upload (traffic leaving)"
            )
        }
        let amount = words.dropLast(2).joined(separator: " ")
        let example = "20KB, 1.5 MB or 100 packets"
        let quantity = try QuantityText(amount, kind: "amount of traffic", example: example)
        let number = quantity.number
        guard !number.isNegative || number.isZero else {
            throw UnitParseError("'\(amount)' is negative; a trigger counts 1 byte or packet or more")
        }
        guard !quantity.unit.isEmpty else {
            throw UnitParseError("'\(amount)' has no unit; write it like \(example)")
        }
        let unit: Unit
        let factor: UInt64
        if ["packet", "packets"].contains(quantity.unit.lowercased()) {
            unit = .packets
            factor = 1
            guard !number.isFiner(thanFactor: 1) else {
                throw UnitParseError("'\(amount)' is not a whole number of packets")
            }
        } else if let bytes = ByteSize.factor(of: quantity.unit) {
            unit = .bytes
            factor = bytes
            guard !number.isFiner(thanFactor: factor) else {
                throw UnitParseError("'\(amount)' is not a whole number of bytes")
            }
        } else if ByteSize.isMiscased(quantity.unit) {
            throw UnitParseError(
                "unknown unit '\(quantity.unit)' in '\(amount)'; bytes are written with a capital B: B, KB (or kB), MB, GB, KiB, MiB, GiB (a lower-case b would mean bits)"
            )
        } else {
            throw UnitParseError(
                "unknown unit '\(quantity.unit)' in '\(amount)'; accepted units: B, KB (or kB), MB, GB (powers of 1000), KiB, MiB, GiB (powers of 1024), packets"
            )
        }
        guard let threshold = number.scaled(by: factor, limit: UInt64.max) else {
            throw UnitParseError("'\(amount)' is more than any counter holds")
        }
        guard threshold >= 1 else {
            throw UnitParseError("'\(amount)' is nothing; a trigger counts at least 1 \(unit == .bytes ? "byte" : "packet")")
        }
        self.init(direction: direction, unit: unit, threshold: threshold)
    }
}
