import ControlAPI
import Profiles

/// Which profile a request wants: one of the daemon's, by name, or one it brings along.
public enum ProfileChoice: Sendable, Equatable {
    case named(String)
    /// Parsed and validated exactly like a profile file; `stem` is empty, which marks it as
    /// not from any directory (reload leaves it alone).
    case defined(CatalogEntry)

    /// The choice a request's `profile` or `definition` makes; exactly one must be given.
    package static func from(profile: String?, definition: ProfileDefinition?) throws(ControlError) -> ProfileChoice {
        switch (profile, definition) {
        case (let name?, nil):
            return .named(name)
        case (nil, let definition?):
            do {
                let parsed = try ProfileParser.parse(yaml: definition.yaml, file: definition.source)
                return .defined(CatalogEntry(profile: parsed, file: definition.source, stem: ""))
            } catch {
                throw ControlError.badProfile(error)
            }
        case (nil, nil):
            throw .badRequest("the JSON body lacks the field 'profile' (a name) or 'definition' (a profile of its own)")
        case (_?, _?):
            throw .badRequest("give either 'profile' or 'definition', not both")
        }
    }
}

extension CatalogEntry {
    /// Given with a request rather than loaded from a profile directory.
    var isAdHoc: Bool { stem.isEmpty }
}

extension ProfileChoice: ExpressibleByStringLiteral {
    public init(stringLiteral name: String) {
        self = .named(name)
    }
}
