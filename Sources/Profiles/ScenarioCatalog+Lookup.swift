import NameMatching
/// A name that matches no scenario, with the names it might have meant.
public struct UnknownScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    public var query: String
    public var suggestions: [String]

    public init(query: String, suggestions: [String]) {
        self.query = query
        self.suggestions = suggestions
    }

    public var description: String {
        var text = "no scenario named '\(query)'"
        if !suggestions.isEmpty {
            text += "; did you mean " + suggestions.map { "'\($0)'" }.joined(separator: " or ") + "?"
        }
        return text
    }
}

extension ScenarioCatalog {
    /// Finds a scenario by display name (`Slow Net, then Black Hole`) or file stem
    /// (`slow-net-then-black-hole`), ignoring case, spaces and punctuation.
    public func entry(named query: String) throws(UnknownScenarioError) -> ScenarioEntry {
        let wanted = compactSlug(query)
        if !wanted.isEmpty, let match = entries.first(where: { compactSlug($0.scenario.name) == wanted })
            ?? entries.first(where: { compactSlug($0.stem) == wanted }) {
            return match
        }
        throw UnknownScenarioError(query: query, suggestions: similarNames(to: query, among: entries.map(\.scenario.name)))
    }

    /// The scenarios sorted by name, as listings show them.
    public var sortedEntries: [ScenarioEntry] {
        entries.sorted { namesInReadingOrder($0.scenario.name, $1.scenario.name) }
    }
}
