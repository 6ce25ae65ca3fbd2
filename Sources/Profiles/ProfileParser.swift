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
    static let dnsFields = ["delay", "failure", "names"]

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

        let dns = try dns(document.fields["dns"], path: "dns", file: file)

        return Profile(
            name: name,
            description: description,
            downlink: try conditions(document.fields["downlink"], path: "downlink", file: file, traces: traces),
            uplink: try conditions(document.fields["uplink"], path: "uplink", file: file, traces: traces),
            dnsDelay: dns.delay,
            failure: try failure(of: document),
            dnsFailure: dns.failure
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

    /// A `dns:` section at `path`: the extra delay of every lookup, and the lookups that fail
    /// (`failure:`, for the `names:` listed or every name); nothing when absent.
    static func dns(_ node: YAMLNode?, path: String, file: String) throws(ProfileError) -> (delay: Delay, failure: DNSFailure?) {
        guard let node else { return (.zero, nil) }
        let dns = try YAMLSection(node: node, path: path, file: file)
        try dns.rejectUnknownFields(allowed: dnsFields)
        let delay = try dns.value("delay", default: .zero, Delay.init(parsing:))
        let kind = try dns.value("failure", default: nil) { text throws(UnitParseError) in try DNSFailure.kind(parsing: text) }
        var names: [String] = []
        if let namesNode = dns.fields["names"] {
            guard kind != nil else {
                throw ProfileError(code: .badValue, file: file, line: namesNode.line, field: dns.dotted("names"), message: "names the lookups that fail, so it needs failure: (nxdomain, servfail or timeout) beside it")
            }
            let items: [YAMLNode]
            switch namesNode {
            case .sequence(let nodes, _): items = nodes
            case .scalar: items = [namesNode]
            case .mapping: throw ProfileError(code: .wrongType, file: file, line: namesNode.line, field: dns.dotted("names"), message: "must be a list of host names, e.g. [api.example.com, \"*.cdn.example.com\"]")
            }
            guard items.count <= DNSFailure.maximumNames else {
                throw ProfileError(code: .badValue, file: file, line: namesNode.line, field: dns.dotted("names"), message: "lists \(items.count) names; at most \(DNSFailure.maximumNames)")
            }
            for (index, item) in items.enumerated() {
                let field = "names[\(index)]"
                let text = try dns.scalar(item, field: field)
                do {
                    names.append(try DNSFailure.name(parsing: text))
                } catch {
                    throw ProfileError(code: .badValue, file: file, line: item.line, field: dns.dotted(field), message: error.message)
                }
            }
        }
        return (delay, kind.map { DNSFailure(kind: $0, names: names) })
    }
}
