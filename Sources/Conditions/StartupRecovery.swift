import Shaping

// The pure parts of start-up: which conditions share a tree, what each tree is to hold, and
// what the history says was done.

extension Array where Element == Condition {
    /// The conditions by the tree they share, trees in the order of their first condition.
    func groupedByTree() -> [(KernelConvergence, [Condition])] {
        var groups: [(KernelConvergence, [Condition])] = []
        for condition in self {
            if let index = groups.firstIndex(where: { $0.0 === condition.convergence }) {
                groups[index].1.append(condition)
            } else {
                groups.append((condition.convergence, [condition]))
            }
        }
        return groups
    }
}

extension KernelConvergence {
    /// Brings the tree to what `conditions`, all of them on it, want by their recovered
    /// policies; traces start again from their beginning.
    func recover(_ conditions: [Condition]) throws(ShapingError) -> Recovery {
        let whole = conditions.first { $0.slot == .whole }?.policy.effective?.profile.paced(at: 0).profile
        let matches = conditions.compactMap { condition -> MatchedCondition? in
            guard case .match(let number, let match) = condition.slot, let profile = condition.policy.effective?.profile else { return nil }
            return MatchedCondition(slot: number, match: match, profile: profile.paced(at: 0).profile)
        }
        return try recover(whole: whole, matches: matches)
    }
}

extension KernelConvergence.Recovery {
    /// What the history says start-up did for a condition on the tree it recovered, `nil` for
    /// nothing worth saying: its tree kept, built or rebuilt when it `wanted` a profile, the
    /// leftovers of an earlier daemon removed (said once, by the whole interface's condition).
    func startupDetail(wholeInterface: Bool, wanted: Bool) -> String? {
        switch self {
        case .nothingToDo: nil
        case .removedLeftovers: wholeInterface ? "removed a tree left by an earlier daemon" : nil
        case .readopted: wanted ? "re-adopted the tree an earlier daemon left" : nil
        case .rebuilt(let deviations):
            !wanted ? nil : deviations.isEmpty ? "built it" : "rebuilt it: the tree left was incomplete"
        }
    }
}
