import NameMatching
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One loaded scenario and the file it came from.
public struct ScenarioEntry: Hashable, Sendable {
    public var scenario: Scenario
    /// Path of the YAML file.
    public var file: String
    /// File name without extension, e.g. `subway`; also accepted as the scenario's name.
    public var stem: String

    public init(scenario: Scenario, file: String, stem: String) {
        self.scenario = scenario
        self.file = file
        self.stem = stem
    }
}

/// Every scenario found in an ordered list of directories, plus what was wrong with the rest.
///
/// Works like `ProfileCatalog`: a broken file never hides the good ones but becomes an entry in
/// `problems`, and when two directories define the same name the earlier one wins, so
/// `/etc/linkcond/scenarios` can override a built-in. A scenario is also broken when a step
/// names a profile the given profile catalog does not have.
public struct ScenarioCatalog: Sendable {
    public private(set) var entries: [ScenarioEntry] = []
    public private(set) var problems: [ProfileError] = []
    /// Files whose scenario was overridden by an earlier directory.
    public private(set) var shadowed: [(file: String, by: String)] = []

    public init() {}

    public init(entries: [ScenarioEntry], problems: [ProfileError] = []) {
        self.entries = entries
        self.problems = problems
    }

    /// Loads every `*.yaml` and `*.yml` file of each directory, in order, checking the profiles
    /// that steps name against `profiles`. Directories that do not exist are skipped silently:
    /// `/etc/linkcond/scenarios` is optional.
    public static func load(from directories: [String], profiles: ProfileCatalog) -> ScenarioCatalog {
        var catalog = ScenarioCatalog()
        for directory in directories {
            for file in ProfileCatalog.profileFiles(in: directory) {
                catalog.add(file: file, profiles: profiles)
            }
        }
        return catalog
    }

    /// Reads and parses one file, recording it as an entry or as its problems.
    mutating func add(file: String, profiles: ProfileCatalog) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            problems.append(ProfileError(code: .unreadable, file: file, line: 0, field: "", message: "cannot read: \(fileErrorReason(error))"))
            return
        }
        let scenario: Scenario
        do {
            scenario = try ScenarioParser.parse(yaml: text, file: file, traces: .besideFile)
        } catch {
            problems.append(error)
            return
        }
        let unknown = Self.unknownProfiles(in: scenario, file: file, profiles: profiles)
        guard unknown.isEmpty else {
            problems.append(contentsOf: unknown)
            return
        }
        add(ScenarioEntry(scenario: scenario, file: file, stem: ProfileCatalog.stem(of: file)))
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

    /// Adds a parsed scenario, resolving name clashes: same directory is an error, an earlier
    /// directory shadows a later one.
    mutating func add(_ entry: ScenarioEntry) {
        let slug = profileSlug(entry.scenario.name)
        if let existing = entries.first(where: { profileSlug($0.scenario.name) == slug }) {
            if ProfileCatalog.directory(of: existing.file) == ProfileCatalog.directory(of: entry.file) {
                problems.append(ProfileError(
                    code: .duplicateName, file: entry.file, line: 0, field: "name",
                    message: "'\(entry.scenario.name)' is already defined in \(existing.file)"
                ))
            } else {
                shadowed.append((file: entry.file, by: existing.file))
            }
            return
        }
        entries.append(entry)
    }
}
