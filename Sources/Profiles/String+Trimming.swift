extension StringProtocol {
    /// Without the spaces and tabs at either end (newlines are not blanks inside one line).
    func trimmingSpaces() -> String {
        let isBlank: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }
}
