import NameMatching
/// A name that matches no profile, with the names it might have meant.
public struct UnknownProfileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var query: String
    public var suggestions: [String]

    public var description: String {
        var text = "no profile named '\(query)'"
        if !suggestions.isEmpty {
            text += "; did you mean " + suggestions.map { "'\($0)'" }.joined(separator: " or ") + "?"
        }
        return text
    }
}

extension ProfileCatalog {
    /// Finds a profile by display name (`Slow Net`) or file stem (`slow-net`), ignoring case,
    /// spaces and punctuation (`slownet` too).
    public func entry(named query: String) throws(UnknownProfileError) -> CatalogEntry {
        let wanted = compactSlug(query)
        if !wanted.isEmpty, let match = entries.first(where: { compactSlug($0.profile.name) == wanted })
            ?? entries.first(where: { compactSlug($0.stem) == wanted }) {
            return match
        }
        throw UnknownProfileError(query: query, suggestions: similarNames(to: query, among: entries.map(\.profile.name)))
    }

    /// The profiles sorted by name, as listings show them.
    public var sortedEntries: [CatalogEntry] {
        entries.sorted { namesInReadingOrder($0.profile.name, $1.profile.name) }
    }
}
