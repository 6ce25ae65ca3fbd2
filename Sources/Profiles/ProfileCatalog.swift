import NameMatching
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One loaded profile and the file it came from.
public struct CatalogEntry: Hashable, Sendable {
    public var profile: Profile
    /// Path of the YAML file.
    public var file: String
    /// File name without extension, e.g. `slow-net`; also accepted as the profile's name.
    public var stem: String

    public init(profile: Profile, file: String, stem: String) {
        self.profile = profile
        self.file = file
        self.stem = stem
    }
}

/// Every profile found in an ordered list of directories, plus what was wrong with the rest.
///
/// A broken file never hides the good ones: it becomes an entry in `problems`. When two
/// directories define the same name, the earlier directory wins, so `/etc/linkcond/profiles`
/// can override a built-in.
public struct ProfileCatalog: Sendable {
    public private(set) var entries: [CatalogEntry] = []
    public private(set) var problems: [ProfileError] = []
    /// Files whose profile was overridden by an earlier directory.
    public private(set) var shadowed: [(file: String, by: String)] = []

    public init() {}

    public init(entries: [CatalogEntry], problems: [ProfileError] = []) {
        self.entries = entries
        self.problems = problems
    }

    /// Loads every `*.yaml` and `*.yml` file of each directory, in order. Directories that do
    /// not exist are skipped silently: `/etc/linkcond/profiles` is optional.
    public static func load(from directories: [String]) -> ProfileCatalog {
        var catalog = ProfileCatalog()
        for directory in directories {
            for file in profileFiles(in: directory) {
                catalog.add(file: file)
            }
        }
        return catalog
    }

    static func profileFiles(in directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names
            .filter { !$0.hasPrefix(".") && ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) }
            .sorted()
            .map { directory.hasSuffix("/") ? directory + $0 : directory + "/" + $0 }
    }

    /// Reads and parses one file, recording it as an entry or a problem.
    mutating func add(file: String) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            problems.append(ProfileError(code: .unreadable, file: file, line: 0, field: "", message: "cannot read: \(fileErrorReason(error))"))
            return
        }
        do {
            let profile = try ProfileParser.parse(yaml: text, file: file, traces: .besideFile)
            add(CatalogEntry(profile: profile, file: file, stem: Self.stem(of: file)))
        } catch {
            problems.append(error)
        }
    }

    /// Adds a parsed profile, resolving name clashes: same directory is an error, an earlier
    /// directory shadows a later one.
    mutating func add(_ entry: CatalogEntry) {
        let slug = profileSlug(entry.profile.name)
        if let existing = entries.first(where: { profileSlug($0.profile.name) == slug }) {
            if Self.directory(of: existing.file) == Self.directory(of: entry.file) {
                problems.append(ProfileError(
                    code: .duplicateName, file: entry.file, line: 0, field: "name",
                    message: "'\(entry.profile.name)' is already defined in \(existing.file)"
                ))
            } else {
                shadowed.append((file: entry.file, by: existing.file))
            }
            return
        }
        entries.append(entry)
    }

    static func stem(of file: String) -> String {
        URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
    }

    static func directory(of file: String) -> String {
        URL(fileURLWithPath: file).deletingLastPathComponent().path
    }
}
