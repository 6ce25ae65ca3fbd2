import NameMatching
/// Reads one profile file.
///
/// Walks the YAML node tree rather than using `Decodable`, so that every error can name the
/// line it is on.
public enum ProfileParser {
    /// The fields a profile file may contain, with the fields each section may contain.
    static let topLevelFields = ["name", "description", "downlink", "uplink", "dns"]
    static let directionFields = ["bandwidth", "delay", "jitter", "loss"]
    static let dnsFields = ["delay"]

    /// Parses `yaml`, naming `file` in errors.
    public static func parse(yaml: String, file: String) throws(ProfileError) -> Profile {
        let composed: YAMLNode?
        do {
            composed = try YAMLComposer.compose(yaml)
        } catch {
            throw ProfileError(code: .syntax, file: file, line: error.line, field: "", message: "YAML syntax error: \(error.problem)")
        }
        guard let root = composed else {
            throw ProfileError(code: .missingField, file: file, line: 0, field: "name", message: "the file is empty; a profile needs at least a name")
        }

        let document = try Section(node: root, path: "", file: file)
        try document.rejectUnknownFields(allowed: topLevelFields)

        guard let nameNode = document.fields["name"] else {
            throw ProfileError(code: .missingField, file: file, line: root.line, field: "name", message: "missing; every profile needs a display name, e.g. name: Slow Net")
        }
        let name = try document.scalar(nameNode, field: "name").trimmingSpaces()
        guard !name.isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.line, field: "name", message: "must not be empty")
        }
        guard !profileSlug(name).isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.line, field: "name", message: "must contain a letter or a digit, so that it can be typed on a command line")
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

    private static func conditions(_ node: YAMLNode?, path: String, file: String) throws(ProfileError) -> LinkConditions {
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
                code: .badValue, file: file, line: jitterNode.line, field: "\(path).jitter",
                message: "jitter \(conditions.jitter) is larger than the delay \(conditions.delay); packets cannot arrive before they were sent"
            )
        }
        return conditions
    }
}

/// A YAML mapping with its location, for reading fields with precise errors.
private struct Section {
    var fields: [String: YAMLNode] = [:]
    /// Keys in the order they are written.
    var keys: [(name: String, line: Int)] = []
    var path: String
    var file: String

    init(node: YAMLNode, path: String, file: String) throws(ProfileError) {
        self.path = path
        self.file = file
        guard case .mapping(let mapping, _) = node else {
            throw ProfileError(
                code: .wrongType, file: file, line: node.line, field: path,
                message: path.isEmpty ? "a profile file must be a mapping of fields (name:, downlink:, ...)" : "must be a mapping of fields"
            )
        }
        for (key, value) in mapping {
            guard case .scalar(let name, let line) = key else {
                throw ProfileError(code: .wrongType, file: file, line: key.line, field: path, message: "field names must be plain words")
            }
            if let first = keys.first(where: { $0.name == name }) {
                throw ProfileError(code: .syntax, file: file, line: first.line, field: dotted(name), message: "appears more than once")
            }
            fields[name] = value
            keys.append((name, line))
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

    func scalar(_ node: YAMLNode, field: String) throws(ProfileError) -> String {
        guard case .scalar(let text, _) = node else {
            throw ProfileError(code: .wrongType, file: file, line: node.line, field: dotted(field), message: "must be a single value, not a list or mapping")
        }
        return text
    }

    func value<Value>(
        _ field: String, default defaultValue: Value, _ parse: (String) throws(UnitParseError) -> Value
    ) throws(ProfileError) -> Value {
        guard let node = fields[field] else { return defaultValue }
        let text = try scalar(node, field: field)
        do {
            return try parse(text)
        } catch {
            throw ProfileError(code: .badValue, file: file, line: node.line, field: dotted(field), message: error.message)
        }
    }
}
