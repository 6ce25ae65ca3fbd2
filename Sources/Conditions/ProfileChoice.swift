import Profiles

/// Which profile a request wants: one of the daemon's, by name, or one it brings along; or a
/// scenario, whose steps choose the profiles one after another.
public enum ProfileChoice: Sendable, Equatable {
    case named(String)
    /// Parsed and validated exactly like a profile file; `stem` is empty, which marks it as
    /// not from any directory (reload leaves it alone).
    case defined(ProfileEntry)
    /// One of the daemon's scenarios, by name or file stem.
    case scenario(String)
}

extension ProfileEntry {
    /// Given with a request rather than loaded from a profile directory.
    var isAdHoc: Bool { stem.isEmpty }
}

extension ProfileChoice: ExpressibleByStringLiteral {
    public init(stringLiteral name: String) {
        self = .named(name)
    }
}
