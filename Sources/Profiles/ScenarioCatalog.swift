extension Scenario: CatalogItem {
    public static var kind: String { "scenario" }
}

/// Every scenario of the scenario directories: see `Catalog`. A scenario is also broken when a
/// step names a profile the given profile catalog does not have.
public typealias ScenarioCatalog = Catalog<Scenario>
public typealias ScenarioEntry = CatalogEntry<Scenario>
public typealias UnknownScenarioError = UnknownNameError<Scenario>

extension CatalogEntry where Item == Scenario {
    public var scenario: Scenario {
        get { item }
        set { item = newValue }
    }

    public init(scenario: Scenario, file: String, stem: String) {
        self.init(scenario, file: file, stem: stem)
    }
}

extension Catalog where Item == Scenario {
    /// Loads every scenario file of each directory, in order, checking the profiles that steps
    /// name against `profiles`.
    public static func load(from directories: [String], profiles: ProfileCatalog) -> ScenarioCatalog {
        load(from: directories) { text, file in
            let scenario: Scenario
            do throws(ProfileError) {
                scenario = try ScenarioParser.parse(yaml: text, file: file, traces: .besideFile)
            } catch {
                return .failure(Problems(errors: [error]))
            }
            let unknown = unknownProfiles(in: scenario, file: file, profiles: profiles)
            return unknown.isEmpty ? .success(scenario) : .failure(Problems(errors: unknown))
        }
    }

    /// A problem for each step that names a profile `profiles` does not have.
    static func unknownProfiles(in scenario: Scenario, file: String, profiles: ProfileCatalog) -> [ProfileError] {
        var found: [ProfileError] = []
        for (offset, step) in scenario.steps.enumerated() {
            guard case .named(let name) = step.profile else { continue }
            do {
                _ = try profiles.entry(named: name)
            } catch {
                found.append(ProfileError(code: .badValue, file: file, line: step.line, field: "steps[\(offset + 1)].profile", message: error.description))
            }
        }
        return found
    }
}
