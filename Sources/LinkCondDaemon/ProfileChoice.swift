import ControlAPI
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

    /// The choice a request's `profile`, `definition` or `scenario` makes; exactly one must be given.
    package static func from(profile: String?, definition: ProfileDefinition?, scenario: String? = nil) throws(ControlError) -> ProfileChoice {
        switch (profile, definition, scenario) {
        case (let name?, nil, nil):
            return .named(name)
        case (nil, let definition?, nil):
            do {
                let parsed = try ProfileParser.parse(yaml: definition.yaml, file: definition.source)
                return .defined(ProfileEntry(profile: parsed, file: definition.source, stem: ""))
            } catch {
                throw ControlError.badProfile(error)
            }
        case (nil, nil, let name?):
            return .scenario(name)
        case (nil, nil, nil):
            throw .badRequest("the JSON body lacks the field 'profile' (a name), 'definition' (a profile of its own) or 'scenario' (a scenario's name)")
        default:
            throw .badRequest("give one of 'profile', 'definition' and 'scenario', not several")
        }
    }
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
