/// A composed YAML node and the line it starts on: all a profile file needs of YAML.
///
/// Scalars stay text; the profile parser gives them meaning, so YAML 1.1's `yes`/`no`/`on`/`off`
/// booleans never get a chance to turn a name into `true`.
indirect enum YAMLNode: Sendable {
    case scalar(String, line: Int)
    /// Keys and values in the order they are written; duplicates are the reader's to judge.
    case mapping([(key: YAMLNode, value: YAMLNode)], line: Int)
    case sequence([YAMLNode], line: Int)

    /// 1-based, as editors count.
    var line: Int {
        switch self {
        case .scalar(_, let line), .mapping(_, let line), .sequence(_, let line): line
        }
    }
}

/// Text that is not well-formed YAML, with the line libyaml stopped at.
struct YAMLSyntaxError: Error, Sendable {
    var line: Int
    var problem: String
}
