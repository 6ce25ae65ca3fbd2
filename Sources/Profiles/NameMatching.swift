/// Lower-case words joined by dashes: `Slow Net` -> `slow-net`, `WiFi 802.11ac` -> `wifi-802-11ac`.
///
/// Display names and file stems both reduce to this form, so either finds a profile.
public func profileSlug(_ name: String) -> String {
    var slug = ""
    var pendingDash = false
    for character in name.lowercased() {
        if character.isLetter || character.isNumber {
            if pendingDash && !slug.isEmpty { slug.append("-") }
            slug.append(character)
            pendingDash = false
        } else {
            pendingDash = true
        }
    }
    return slug
}

/// Levenshtein distance between two strings, counted in characters.
func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let left = Array(lhs)
    let right = Array(rhs)
    if left.isEmpty { return right.count }
    if right.isEmpty { return left.count }
    var previous = Array(0...right.count)
    var current = [Int](repeating: 0, count: right.count + 1)
    for i in 1...left.count {
        current[0] = i
        for j in 1...right.count {
            let substitution = previous[j - 1] + (left[i - 1] == right[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[right.count]
}

/// Candidates that look like `query`: close in spelling, or containing it, best first.
func similarNames(to query: String, among candidates: [String], limit: Int = 3) -> [String] {
    let wanted = profileSlug(query)
    guard !wanted.isEmpty else { return [] }
    let tolerance = max(2, wanted.count / 3)
    let scored = candidates.compactMap { candidate -> (String, Int)? in
        let slug = profileSlug(candidate)
        if slug.contains(wanted) || wanted.contains(slug) {
            return (candidate, 0)
        }
        let distance = editDistance(wanted, slug)
        return distance <= tolerance ? (candidate, distance) : nil
    }
    var seen = Set<String>()
    return scored
        .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        .map(\.0)
        .filter { seen.insert($0).inserted }
        .prefix(limit)
        .map { $0 }
}

/// The single closest candidate within spelling distance, for "did you mean" on field names.
func closestName(to query: String, among candidates: [String]) -> String? {
    similarNames(to: query, among: candidates, limit: 1).first
}

/// Orders names as people read them: case-insensitively, and runs of digits by their value
/// (`3G` before `100% Loss`, `WiFi` before `WiFi 802.11ac`).
func namesInReadingOrder(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs.lowercased()[...]
    var right = rhs.lowercased()[...]
    while let l = left.first, let r = right.first {
        if l.isASCII, l.isNumber, r.isASCII, r.isNumber {
            let leftDigits = left.prefix { $0.isASCII && $0.isNumber }
            let rightDigits = right.prefix { $0.isASCII && $0.isNumber }
            let leftValue = leftDigits.drop { $0 == "0" }
            let rightValue = rightDigits.drop { $0 == "0" }
            if leftValue.count != rightValue.count { return leftValue.count < rightValue.count }
            if leftValue != rightValue { return leftValue < rightValue }
            left = left.dropFirst(leftDigits.count)
            right = right.dropFirst(rightDigits.count)
        } else {
            if l != r { return l < r }
            left = left.dropFirst()
            right = right.dropFirst()
        }
    }
    return left.isEmpty && !right.isEmpty
}
