import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Profiles

/// What the daemon wants in force, written before every change so that a daemon killed at any
/// moment can be followed by one that finishes the job or undoes it.
///
/// Profiles are stored with their values: a restarted daemon restores what was asked for even
/// if the profile file changed meanwhile.
struct PersistedState: Codable, Equatable {
    struct StoredProfile: Codable, Equatable {
        var document: ProfileDocument
        var stem: String
    }

    struct StoredLease: Codable, Equatable {
        var profile: StoredProfile
        var holder: HolderDocument
        var since: Date
        var expires: Date?
        var clientBound: Bool
    }

    var version = 1
    var interface: String
    /// The condition without any lease; `nil` is off.
    var baseline: StoredProfile?
    var baselineSince: Date
    var lease: StoredLease?
}

extension PersistedState.StoredProfile {
    init(_ entry: CatalogEntry) {
        self.init(document: ProfileDocument(entry), stem: entry.stem)
    }

    /// The entry back, or `nil` if the stored values no longer parse (a newer daemon's format).
    var entry: CatalogEntry? {
        guard let profile = try? Profile(document) else { return nil }
        return CatalogEntry(profile: profile, file: document.file, stem: stem)
    }
}

/// Reads and atomically replaces the state file.
struct StateStore: Sendable {
    let url: URL

    init(directory: String, interface: String) {
        self.url = URL(fileURLWithPath: directory).appendingPathComponent("\(interface).state.json")
    }

    func load() -> PersistedState? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(PersistedState.self, from: data)
    }

    /// Write-then-rename: a reader (or a daemon killed mid-write) sees the old file or the new one.
    func save(_ state: PersistedState) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try encoder.encode(state).write(to: url, options: .atomic)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
