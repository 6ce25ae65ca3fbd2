/// Reads one profile file.
///
/// Walks the YAML node tree rather than using `Decodable`, so that every error can name the
/// line it is on.
public enum ProfileParser {
    /// The fields a profile file may contain, with the fields each section may contain.
    static let topLevelFields = ["name", "description", "failure", "downlink", "uplink", "dns"]
    static let directionFields = [
        "bandwidth", "trace", "delay", "jitter", "loss",
        "jitter-distribution", "jitter-correlation", "keep-order",
        "loss-correlation", "burst-loss",
        "duplicate", "duplicate-correlation", "corrupt", "corrupt-correlation",
        "reorder", "reorder-correlation", "queue",
    ]
    static let dnsFields = ["delay"]

    /// Parses `yaml`, naming `file` in errors. A direction's `trace:` reads its file only with
    /// `traces: .besideFile`, for a file from a profile directory: by default a profile is text
    /// from anywhere, which must not make the daemon read files.
    public static func parse(yaml: String, file: String, traces: TraceFileAccess = .refused) throws(ProfileError) -> Profile {
        let composed: YAMLNode?
        do {
            composed = try YAMLComposer.compose(yaml)
        } catch {
            throw ProfileError(code: .syntax, file: file, line: error.line, field: "", message: "YAML syntax error: \(error.problem)")
        }
        guard let root = composed else {
            throw ProfileError(code: .missingField, file: file, line: 0, field: "name", message: "the file is empty; a profile needs at least a name")
        }

        let document = try YAMLSection(node: root, path: "", file: file)
        try document.rejectUnknownFields(allowed: topLevelFields)

        let name = try document.displayName(kind: "profile", example: "Slow Net", documentLine: root.line)
        var description = ""
        if let descriptionNode = document.fields["description"] {
            description = try document.scalar(descriptionNode, field: "description")
        }

        let dns = try dnsDelay(document.fields["dns"], path: "dns", file: file)

        return Profile(
            name: name,
            description: description,
            downlink: try conditions(document.fields["downlink"], path: "downlink", file: file, traces: traces),
            uplink: try conditions(document.fields["uplink"], path: "uplink", file: file, traces: traces),
            dnsDelay: dns,
            failure: try failure(of: document)
        )
    }

    /// A profile's or an inline scenario step's `failure:`; none when absent.
    static func failure(of section: YAMLSection) throws(ProfileError) -> ConnectionFailure? {
        try section.value("failure", default: nil) { text throws(UnitParseError) in try ConnectionFailure(parsing: text) }
    }

    /// One direction's values (`downlink:` or `uplink:` at `path`); unshaped when absent.
    /// Also reads a scenario step's inline values, whose `trace:` is relative to the scenario's `file`.
    static func conditions(_ node: YAMLNode?, path: String, file: String, traces: TraceFileAccess) throws(ProfileError) -> LinkConditions {
        guard let node else { return .unshaped }
        let section = try YAMLSection(node: node, path: path, file: file)
        try section.rejectUnknownFields(allowed: directionFields)
        // In the order written, so that of two bad values the first one is reported.
        var conditions = LinkConditions.unshaped
        for key in section.keys {
            try readDirectionField(key.name, of: section, traces: traces, into: &conditions)
        }
        try checkDirection(conditions, section: section)
        return conditions
    }

    /// The extra DNS delay of a `dns:` section at `path`; none when absent.
    static func dnsDelay(_ node: YAMLNode?, path: String, file: String) throws(ProfileError) -> Delay {
        guard let node else { return .zero }
        let dns = try YAMLSection(node: node, path: path, file: file)
        try dns.rejectUnknownFields(allowed: dnsFields)
        return try dns.value("delay", default: .zero, Delay.init(parsing:))
    }
}
