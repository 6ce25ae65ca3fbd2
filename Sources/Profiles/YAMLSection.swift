import NameMatching

/// A YAML mapping with its location, for reading fields with precise errors: what the profile
/// and scenario parsers share.
struct YAMLSection {
    var fields: [String: YAMLNode] = [:]
    /// Keys in the order they are written.
    var keys: [(name: String, line: Int)] = []
    /// Dotted path of the mapping, e.g. `downlink` or `steps[2].uplink`; empty for the document.
    var path: String
    var file: String

    /// Reads `node` as a mapping; `notAMapping` is the message when it is not (by default, one
    /// for a profile file at the top and a generic one below).
    init(node: YAMLNode, path: String, file: String, notAMapping: String? = nil) throws(ProfileError) {
        self.path = path
        self.file = file
        guard case .mapping(let mapping, _) = node else {
            throw ProfileError(
                code: .wrongType, file: file, line: node.line, field: path,
                message: notAMapping
                    ?? (path.isEmpty ? "a profile file must be a mapping of fields (name:, downlink:, ...)" : "must be a mapping of fields")
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
            if let suggestion = suggestedField(for: key, among: allowed) {
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

    /// The display name in `name`, trimmed: required, not empty, and with a letter or a digit
    /// so that it can be typed. `kind` is `profile` or `scenario`, for the messages.
    func displayName(kind: String, example: String, documentLine: Int) throws(ProfileError) -> String {
        guard let nameNode = fields["name"] else {
            throw ProfileError(code: .missingField, file: file, line: documentLine, field: dotted("name"), message: "missing; every \(kind) needs a display name, e.g. name: \(example)")
        }
        let name = try scalar(nameNode, field: "name").trimmingSpaces()
        guard !name.isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.line, field: dotted("name"), message: "must not be empty")
        }
        guard !profileSlug(name).isEmpty else {
            throw ProfileError(code: .badValue, file: file, line: nameNode.line, field: dotted("name"), message: "must contain a letter or a digit, so that it can be typed on a command line")
        }
        return name
    }
}
