import CYAML

/// Builds the node tree of a one-document YAML text from libyaml's parser events.
///
/// Anchors and aliases are resolved; tags are ignored (every scalar is text).
struct YAMLComposer: ~Copyable {
    /// Deeper nesting is refused: a profile needs three levels, and composing recurses, so an
    /// unbounded depth would let a hostile file overflow the stack.
    static let maximumDepth = 32

    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private var anchors: [String: YAMLNode] = [:]

    /// What the file is, for messages: `profile` or `scenario`.
    private let kind: String

    /// The document in `text`, or `nil` when it holds none (empty, or only comments). `kind`
    /// names what the file holds, for messages.
    static func compose(_ text: String, kind: String = "profile") throws(YAMLSyntaxError) -> YAMLNode? {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer throws(YAMLSyntaxError) in
            var composer = YAMLComposer(input: buffer, kind: kind)
            return try composer.document()
        }
    }

    private init(input: UnsafeBufferPointer<UInt8>, kind: String) {
        self.kind = kind
        parser = .allocate(capacity: 1)
        yaml_parser_initialize(parser)
        yaml_parser_set_input_string(parser, input.baseAddress, input.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
    }

    private mutating func document() throws(YAMLSyntaxError) -> YAMLNode? {
        guard case .streamStart = try next().kind else { throw unexpected("the start of the text") }
        let first = try next()
        switch first.kind {
        case .streamEnd:
            return nil
        case .documentStart:
            break
        default:
            throw unexpected("a document", at: first)
        }
        let root = try node(startingWith: try next(), depth: 1)
        guard case .documentEnd = try next().kind else { throw unexpected("the end of the document") }
        let after = try next()
        guard case .streamEnd = after.kind else {
            throw YAMLSyntaxError(line: after.line, problem: "a \(kind) file holds one document; found a second one")
        }
        return root
    }

    private mutating func node(startingWith event: Event, depth: Int) throws(YAMLSyntaxError) -> YAMLNode {
        guard depth <= Self.maximumDepth else {
            throw YAMLSyntaxError(line: event.line, problem: "nested more than \(Self.maximumDepth) levels deep")
        }
        let composed: YAMLNode
        switch event.kind {
        case .scalar(let value):
            composed = .scalar(value, line: event.line)
        case .mappingStart:
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            while true {
                let keyEvent = try next()
                if case .mappingEnd = keyEvent.kind { break }
                let key = try node(startingWith: keyEvent, depth: depth + 1)
                pairs.append((key, try node(startingWith: try next(), depth: depth + 1)))
            }
            composed = .mapping(pairs, line: event.line)
        case .sequenceStart:
            var items: [YAMLNode] = []
            while true {
                let itemEvent = try next()
                if case .sequenceEnd = itemEvent.kind { break }
                items.append(try node(startingWith: itemEvent, depth: depth + 1))
            }
            composed = .sequence(items, line: event.line)
        case .alias(let name):
            guard let anchored = anchors[name] else {
                throw YAMLSyntaxError(line: event.line, problem: "found undefined alias '\(name)'")
            }
            return anchored
        default:
            throw unexpected("a value", at: event)
        }
        if let anchor = event.anchor {
            anchors[anchor] = composed
        }
        return composed
    }

    private func unexpected(_ expected: String, at event: Event? = nil) -> YAMLSyntaxError {
        YAMLSyntaxError(line: event?.line ?? Int(parser.pointee.mark.line) + 1, problem: "expected \(expected)")
    }

    /// The next event, copied out of libyaml's so that its memory is released at once.
    private mutating func next() throws(YAMLSyntaxError) -> Event {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else {
            let problem = parser.pointee.problem.map { String(cString: $0) } ?? "unreadable text"
            throw YAMLSyntaxError(line: Int(parser.pointee.problem_mark.line) + 1, problem: problem)
        }
        defer { yaml_event_delete(&event) }
        return Event(event)
    }
}

/// One libyaml parser event, in Swift values.
private struct Event {
    enum Kind {
        case streamStart, streamEnd, documentStart, documentEnd
        case scalar(String)
        case mappingStart, mappingEnd, sequenceStart, sequenceEnd
        case alias(String)
    }

    var kind: Kind
    var anchor: String?
    /// 1-based.
    var line: Int

    init(_ event: yaml_event_t) {
        line = Int(event.start_mark.line) + 1
        anchor = nil
        switch event.type {
        case YAML_STREAM_START_EVENT: kind = .streamStart
        case YAML_DOCUMENT_START_EVENT: kind = .documentStart
        case YAML_DOCUMENT_END_EVENT: kind = .documentEnd
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            kind = .scalar(Self.text(scalar.value, length: scalar.length))
            anchor = Self.text(scalar.anchor)
        case YAML_MAPPING_START_EVENT:
            kind = .mappingStart
            anchor = Self.text(event.data.mapping_start.anchor)
        case YAML_MAPPING_END_EVENT: kind = .mappingEnd
        case YAML_SEQUENCE_START_EVENT:
            kind = .sequenceStart
            anchor = Self.text(event.data.sequence_start.anchor)
        case YAML_SEQUENCE_END_EVENT: kind = .sequenceEnd
        case YAML_ALIAS_EVENT: kind = .alias(Self.text(event.data.alias.anchor) ?? "")
        default: kind = .streamEnd
        }
    }

    private static func text(_ bytes: UnsafeMutablePointer<yaml_char_t>?, length: Int) -> String {
        guard let bytes else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    private static func text(_ bytes: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        bytes.map { String(cString: $0) }
    }
}
