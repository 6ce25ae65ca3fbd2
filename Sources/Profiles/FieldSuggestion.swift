import NameMatching

/// The field `key` most likely meant, for "did you mean" on an unknown field; `nil` when none
/// stands out, so that the message lists the allowed fields instead.
///
/// Unlike `closestName`, a typo of a whole field name wins over a field name the key merely
/// contains: `loss-corelation` means `loss-correlation`, not `loss`. In order:
/// 1. a typo: the candidate fewest edits away, within `closestName`'s tolerance;
/// 2. an abbreviation: the one candidate that contains the key (`burst` for `burst-loss`);
/// 3. a longer name: the longest candidate the key contains (`bandwidth-limit` for `bandwidth`).
/// A tie at the deciding step suggests nothing (`correlation` is in five field names).
func suggestedField(for key: String, among candidates: [String]) -> String? {
    let wanted = profileSlug(key)
    guard !wanted.isEmpty else { return nil }
    let slugs = candidates.map { (name: $0, slug: profileSlug($0)) }

    let tolerance = max(1, min(3, wanted.count / 3))
    let typos = slugs.map { (name: $0.name, distance: editDistance(wanted, $0.slug)) }.filter { $0.distance <= tolerance }
    if let best = typos.map(\.distance).min() {
        let closest = typos.filter { $0.distance == best }
        return closest.count == 1 ? closest[0].name : nil
    }

    guard wanted.count >= 3 else { return nil }
    let containing = slugs.filter { $0.slug.count >= 3 && $0.slug.contains(wanted) }
    if !containing.isEmpty {
        return containing.count == 1 ? containing[0].name : nil
    }
    let contained = slugs.filter { $0.slug.count >= 3 && wanted.contains($0.slug) }
    guard let longest = contained.map(\.slug.count).max() else { return nil }
    let best = contained.filter { $0.slug.count == longest }
    return best.count == 1 ? best[0].name : nil
}
