import Conditions
import ControlAPI
import Profiles

extension ProfileChoice {
    /// The choice a request's `profile`, `definition` or `scenario` makes; exactly one must be given.
    static func from(profile: String?, definition: ProfileDefinition?, scenario: String? = nil) throws(ControlError) -> ProfileChoice {
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
