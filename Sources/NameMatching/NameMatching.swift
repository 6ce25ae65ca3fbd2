/// Name matching shared by the daemon (profile names) and the client (command names).

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

/// Edit distance between two strings in characters, where swapping two neighbours counts as
/// one edit (optimal string alignment): `nmae` is one typo away from `name`.
public func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let left = Array(lhs)
    let right = Array(rhs)
    if left.isEmpty { return right.count }
    if right.isEmpty { return left.count }
    var beforePrevious = [Int](repeating: 0, count: right.count + 1)
    var previous = Array(0...right.count)
    var current = [Int](repeating: 0, count: right.count + 1)
    for i in 1...left.count {
        current[0] = i
        for j in 1...right.count {
            let substitution = previous[j - 1] + (left[i - 1] == right[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            if i > 1, j > 1, left[i - 1] == right[j - 2], left[i - 2] == right[j - 1] {
                current[j] = min(current[j], beforePrevious[j - 2] + 1)
            }
        }
        (beforePrevious, previous, current) = (previous, current, beforePrevious)
    }
    return previous[right.count]
}

/// Candidates that look like `query`, best first: close in spelling (a typo or two, more for
/// long names), or containing it when it is long enough to mean something. Nothing when
/// nothing is close: a suggestion that is not is noise.
public func similarNames(to query: String, among candidates: [String], limit: Int = 3) -> [String] {
    let wanted = profileSlug(query)
    guard !wanted.isEmpty else { return [] }
    let tolerance = max(1, min(3, wanted.count / 3))
    let scored = candidates.compactMap { candidate -> (String, Int)? in
        let slug = profileSlug(candidate)
        if wanted.count >= 3, slug.count >= 3, slug.contains(wanted) || wanted.contains(slug) {
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
public func closestName(to query: String, among candidates: [String]) -> String? {
    similarNames(to: query, among: candidates, limit: 1).first
}

/// The slug without its dashes: `slownet`, `slow-net` and `Slow Net` all match `slownet`, so
/// names match ignoring case, spaces and punctuation.
public func compactSlug(_ name: String) -> String {
    profileSlug(name).filter { $0 != "-" }
}
