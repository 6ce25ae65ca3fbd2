import Foundation
import Yams

/// Reads one profile file.
///
/// Walks the YAML node tree rather than using `Decodable`, so that every error can name the
/// line it is on. All scalars are read as text: YAML 1.1's `yes`/`no`/`on`/`off` booleans never
/// get a chance to turn a name into `true`.
public enum ProfileParser {
    /// The fields a profile file may contain, with the fields each section may contain.
    static let topLevelFields = ["name", "description", "downlink", "uplink", "dns"]
    static let directionFields = ["bandwidth", "delay", "jitter", "loss"]
    static let dnsFields = ["delay"]

    /// Parses `yaml`, naming `file` in errors.
    public static func parse(yaml: String, file: String) throws(ProfileError) -> Profile {
        let composed: Node?
        do {
            composed = try Yams.compose(yaml: yaml)
        } catch {
            throw syntaxError(error, file: file, yaml: yaml)
        }
        guard let root = composed else {
            throw ProfileError(code: .missingField, file: file, line: 0, field: "name", message: "the file is empty; a profile needs at least a name")
        }

        let document = try Section(node: root, path: "", file: file)
        try document.rejectUnknownFields(allowed: topLevelFields)

        guard let nameNode = document.fields["name"] else {
            throw ProfileError(code: .missingField, file: file, line: root.mark?.line ?? 1, field: "name", message: "missing; every profile needs a display name, e.g. name: Slow Net")
        }
        let name = try document.scalar(nameNode, field: "name").trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.mark?.line ?? 0, field: "name", message: "must not be empty")
        }
        guard !profileSlug(name).isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.mark?.line ?? 0, field: "name", message: "must contain a letter or a digit, so that it can be typed on a command line")
        }
        var description = ""
        if let descriptionNode = document.fields["description"] {
            description = try document.scalar(descriptionNode, field: "description")
        }

        var dnsDelay = Delay.zero
        if let dnsNode = document.fields["dns"] {
            let dns = try Section(node: dnsNode, path: "dns", file: file)
            try dns.rejectUnknownFields(allowed: dnsFields)
            dnsDelay = try dns.value("delay", default: .zero, Delay.init(parsing:))
        }

        return Profile(
            name: name,
            description: description,
            downlink: try conditions(document.fields["downlink"], path: "downlink", file: file),
            uplink: try conditions(document.fields["uplink"], path: "uplink", file: file),
            dnsDelay: dnsDelay
        )
    }

    private static func conditions(_ node: Node?, path: String, file: String) throws(ProfileError) -> LinkConditions {
        guard let node else { return .unshaped }
        let section = try Section(node: node, path: path, file: file)
        try section.rejectUnknownFields(allowed: directionFields)
        let conditions = LinkConditions(
            bandwidth: try section.value("bandwidth", default: nil) { text throws(UnitParseError) in
                try Bandwidth(parsing: text)
            },
            delay: try section.value("delay", default: .zero, Delay.init(parsing:)),
            jitter: try section.value("jitter", default: .zero, Delay.init(parsing:)),
            loss: try section.value("loss", default: .none, LossRate.init(parsing:))
        )
        if conditions.jitter > conditions.delay, let jitterNode = section.fields["jitter"] {
            throw ProfileError(
                code: .badValue, file: file, line: jitterNode.mark?.line ?? 0, field: "\(path).jitter",
                message: "jitter \(conditions.jitter) is larger than the delay \(conditions.delay); packets cannot arrive before they were sent"
            )
        }
        return conditions
    }

    /// The key of the mapping that holds the key at `line`:`column`: the key before a `{` earlier
    /// on the same line (flow style), else the nearest less-indented `key:` above (block style).
    /// Yams reports duplicate keys with their position only.
    static func enclosingSection(ofLine line: Int, column: Int, in yaml: String) -> String? {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard line >= 1, line <= lines.count else { return nil }
        let text = lines[line - 1]
        let before = text.prefix(max(0, column - 1))
        if let brace = before.lastIndex(of: "{") {
            return sectionKey(in: String(before[..<brace]))
        }
        let indentation = text.prefix { $0 == " " }.count
        guard indentation > 0 else { return nil }
        for candidate in lines[..<(line - 1)].reversed() {
            let candidateIndentation = candidate.prefix { $0 == " " }.count
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), candidateIndentation < indentation else { continue }
            return sectionKey(in: candidate)
        }
        return nil
    }

    /// `downlink` from `  downlink:` or `downlink: `.
    private static func sectionKey(in text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasSuffix(":") else { return nil }
        return String(trimmed.dropLast()).trimmingCharacters(in: .whitespaces)
    }

    private static func syntaxError(_ error: Error, file: String, yaml: String) -> ProfileError {
        switch error as? YamlError {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return ProfileError(code: .syntax, file: file, line: mark.line, field: "", message: "YAML syntax error: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let section = enclosingSection(ofLine: context.mark.line, column: context.mark.column, in: yaml)
            let fields = duplicates.map { duplicate in section.map { "\($0).\(duplicate)" } ?? duplicate }
            return ProfileError(code: .syntax, file: file, line: context.mark.line, field: fields.joined(separator: ", "), message: "appears more than once")
        case .reader(let problem, _, _, _):
            return ProfileError(code: .syntax, file: file, line: 0, field: "", message: "cannot read the file: \(problem)")
        default:
            return ProfileError(code: .syntax, file: file, line: 0, field: "", message: "YAML error: \(error)")
        }
    }
}

/// A YAML mapping with its location, for reading fields with precise errors.
private struct Section {
    var fields: [String: Node] = [:]
    /// Keys in the order they are written.
    var keys: [(name: String, line: Int)] = []
    var path: String
    var file: String

    init(node: Node, path: String, file: String) throws(ProfileError) {
        self.path = path
        self.file = file
        guard case .mapping(let mapping) = node else {
            throw ProfileError(
                code: .wrongType, file: file, line: node.mark?.line ?? 0, field: path,
                message: path.isEmpty ? "a profile file must be a mapping of fields (name:, downlink:, ...)" : "must be a mapping of fields"
            )
        }
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key else {
                throw ProfileError(code: .wrongType, file: file, line: key.mark?.line ?? 0, field: path, message: "field names must be plain words")
            }
            fields[scalar.string] = value
            keys.append((scalar.string, key.mark?.line ?? 0))
        }
    }

    func dotted(_ field: String) -> String {
        path.isEmpty ? field : "\(path).\(field)"
    }

    func rejectUnknownFields(allowed: [String]) throws(ProfileError) {
        for (key, line) in keys where !allowed.contains(key) {
            var message = "unknown field"
            if let suggestion = closestName(to: key, among: allowed) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; allowed here: " + allowed.joined(separator: ", ")
            }
            throw ProfileError(code: .unknownField, file: file, line: line, field: dotted(key), message: message)
        }
    }

    func scalar(_ node: Node, field: String) throws(ProfileError) -> String {
        guard case .scalar(let scalar) = node else {
            throw ProfileError(code: .wrongType, file: file, line: node.mark?.line ?? 0, field: dotted(field), message: "must be a single value, not a list or mapping")
        }
        return scalar.string
    }

    func value<Value>(
        _ field: String, default defaultValue: Value, _ parse: (String) throws(UnitParseError) -> Value
    ) throws(ProfileError) -> Value {
        guard let node = fields[field] else { return defaultValue }
        let text = try scalar(node, field: field)
        do {
            return try parse(text)
        } catch {
            throw ProfileError(code: .badValue, file: file, line: node.mark?.line ?? 0, field: dotted(field), message: error.message)
        }
    }
}
