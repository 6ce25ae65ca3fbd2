import NameMatching
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a catalog holds: profiles and scenarios, each defined by a YAML file and known by its
/// name or its file's stem.
public protocol CatalogItem: Hashable, Sendable {
    /// What the item is called in messages: `profile`, `scenario`.
    static var kind: String { get }
    var name: String { get }
}

/// One loaded item and the file it came from.
public struct CatalogEntry<Item: CatalogItem>: Hashable, Sendable {
    public var item: Item
    /// Path of the YAML file.
    public var file: String
    /// File name without extension, e.g. `slow-net`; also accepted as the item's name.
    public var stem: String

    public init(_ item: Item, file: String, stem: String) {
        self.item = item
        self.file = file
        self.stem = stem
    }
}

/// Every item found in an ordered list of directories, plus what was wrong with the rest.
///
/// A broken file never hides the good ones: it becomes an entry in `problems`. When two
/// directories define the same name, the earlier directory wins, so `/etc/linkcond/profiles`
/// can override a built-in.
public struct Catalog<Item: CatalogItem>: Sendable {
    public typealias Entry = CatalogEntry<Item>

    public private(set) var entries: [Entry] = []
    public private(set) var problems: [ProfileError] = []
    /// Files whose item was overridden by an earlier directory.
    public private(set) var shadowed: [(file: String, by: String)] = []

    public init() {}

    public init(entries: [Entry], problems: [ProfileError] = []) {
        self.entries = entries
        self.problems = problems
    }

    /// Loads every `*.yaml` and `*.yml` file of each directory, in order, with PARSE (text and
    /// path to the item, or its problems). Directories that do not exist are skipped silently:
    /// `/etc/linkcond/profiles` is optional.
    static func load(from directories: [String], parse: (_ text: String, _ file: String) -> Result<Item, Problems>) -> Catalog {
        var catalog = Catalog()
        for directory in directories {
            for file in yamlFiles(in: directory) {
                catalog.add(file: file, parse: parse)
            }
        }
        return catalog
    }

    static func yamlFiles(in directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names
            .filter { !$0.hasPrefix(".") && ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) }
            .sorted()
            .map { directory.hasSuffix("/") ? directory + $0 : directory + "/" + $0 }
    }

    /// Reads and parses one file, recording it as an entry or as its problems.
    mutating func add(file: String, parse: (_ text: String, _ file: String) -> Result<Item, Problems>) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            problems.append(ProfileError(code: .unreadable, file: file, line: 0, field: "", message: "cannot read: \(fileErrorReason(error))"))
            return
        }
        switch parse(text, file) {
        case .success(let item): add(Entry(item, file: file, stem: Self.stem(of: file)))
        case .failure(let found): problems.append(contentsOf: found.errors)
        }
    }

    /// Adds a parsed item, resolving name clashes: same directory is an error, an earlier
    /// directory shadows a later one.
    mutating func add(_ entry: Entry) {
        let slug = profileSlug(entry.item.name)
        if let existing = entries.first(where: { profileSlug($0.item.name) == slug }) {
            if Self.directory(of: existing.file) == Self.directory(of: entry.file) {
                problems.append(ProfileError(
                    code: .duplicateName, file: entry.file, line: 0, field: "name",
                    message: "'\(entry.item.name)' is already defined in \(existing.file)"
                ))
            } else {
                shadowed.append((file: entry.file, by: existing.file))
            }
            return
        }
        entries.append(entry)
    }

    /// Finds an item by display name (`Slow Net`) or file stem (`slow-net`), ignoring case,
    /// spaces and punctuation (`slownet` too).
    public func entry(named query: String) throws(UnknownNameError<Item>) -> Entry {
        let wanted = compactSlug(query)
        if !wanted.isEmpty, let match = entries.first(where: { compactSlug($0.item.name) == wanted })
            ?? entries.first(where: { compactSlug($0.stem) == wanted }) {
            return match
        }
        throw UnknownNameError(query: query, suggestions: similarNames(to: query, among: entries.map(\.item.name)))
    }

    /// The entries sorted by name, as listings show them.
    public var sortedEntries: [Entry] {
        entries.sorted { namesInReadingOrder($0.item.name, $1.item.name) }
    }

    static func stem(of file: String) -> String {
        URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
    }

    static func directory(of file: String) -> String {
        URL(fileURLWithPath: file).deletingLastPathComponent().path
    }

    /// What was wrong with one file: one problem or several (a scenario's unknown profiles).
    struct Problems: Error {
        var errors: [ProfileError]
    }
}

/// A name that matches no item of a catalog, with the names it might have meant.
public struct UnknownNameError<Item: CatalogItem>: Error, Sendable, Equatable, CustomStringConvertible {
    public var query: String
    public var suggestions: [String]

    public init(query: String, suggestions: [String]) {
        self.query = query
        self.suggestions = suggestions
    }

    public var description: String {
        var text = "no \(Item.kind) named '\(query)'"
        if !suggestions.isEmpty {
            text += "; did you mean " + suggestions.map { "'\($0)'" }.joined(separator: " or ") + "?"
        }
        return text
    }
}
