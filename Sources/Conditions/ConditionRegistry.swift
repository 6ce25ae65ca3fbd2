import LinkCondVocabulary
import Netlink
import Shaping

/// The conditions the daemon holds, by id, and the tree the conditions of each target share:
/// which exist, which would collide with a new one, which slot a new one takes. Confined to
/// the `Conditioner`, which changes it one request at a time.
struct ConditionRegistry {
    /// The most conditions held at once; more is refused, never queued.
    static let maximumCount = 1024

    let defaultID: ConditionID
    private(set) var byID: [ConditionID: Condition]
    /// One tree per target, keyed by the whole interface's id.
    private var trees: [ConditionID: KernelConvergence]

    /// The default condition is held from the start and never dropped.
    init(default condition: Condition) {
        defaultID = condition.id
        byID = [condition.id: condition]
        trees = [condition.id.target: condition.convergence]
    }

    subscript(id: ConditionID) -> Condition? { byID[id] }

    /// A held condition takes its new value; one no longer held stays gone.
    mutating func update(_ condition: Condition) {
        guard byID[condition.id] != nil else { return }
        byID[condition.id] = condition
    }

    /// Every condition held, in no order.
    var all: Dictionary<ConditionID, Condition>.Values { byID.values }

    var defaultCondition: Condition { byID[defaultID]! }

    /// The default condition first, then the others by id.
    var ordered: [Condition] {
        [defaultCondition] + byID.values.filter { $0.id != defaultID }.sorted { $0.id < $1.id }
    }

    var isFull: Bool { byID.count >= Self.maximumCount }

    var hasConditionsInOtherNamespaces: Bool { byID.keys.contains { $0.namespace != nil } }

    /// The tree the conditions of `id`'s target share, while one of them holds it.
    func tree(of id: ConditionID) -> KernelConvergence? { trees[id.target] }

    mutating func insert(_ condition: Condition) {
        byID[condition.id] = condition
        trees[condition.id.target] = condition.convergence
    }

    /// Removes `condition`, and its target's tree once nothing holds it. False when it was not
    /// held, or is the default one.
    mutating func remove(_ condition: Condition) -> Bool {
        guard condition.id != defaultID, byID[condition.id] != nil else { return false }
        byID[condition.id] = nil
        if !condition.convergence.isInUse, !byID.values.contains(where: { $0.convergence === condition.convergence }) {
            trees[condition.id.target] = nil
        }
        return true
    }

    /// A condition held for the same device in the same namespace under another name (the
    /// namespace by another path).
    func alias(of id: ConditionID, in identity: NamespaceIdentity?) -> Condition? {
        byID.values.first { $0.namespaceIdentity == identity && $0.id.interface == id.interface && $0.id.namespace != id.namespace }
    }

    /// The condition held for `id`'s device and match in the namespace `identity`, whatever path
    /// its id names that namespace by.
    func condition(sameAs id: ConditionID, in identity: NamespaceIdentity) -> Condition? {
        byID.values.first { $0.namespaceIdentity == identity && $0.id.interface == id.interface && $0.id.peer == id.peer }
    }

    /// A condition on the same tree whose match takes exactly the packets `match` would.
    func overlapping(_ match: PeerMatch, on tree: KernelConvergence) -> Condition? {
        byID.values.first { other in
            guard other.convergence === tree, case .match(_, let held) = other.slot else { return false }
            return held.overlapsExactly(match)
        }
    }

    /// The slot a new match on `tree` takes: `preferred` (its stored one, at restart) when
    /// free, else the lowest free one.
    func freeSlot(on tree: KernelConvergence, preferring preferred: UInt16?) -> UInt16 {
        let taken = Set(byID.values.filter { $0.convergence === tree }.compactMap(\.slotNumber))
        return preferred.flatMap { taken.contains($0) ? nil : $0 }
            ?? (1...ReservedHandles.maximumMatchSlot).first { !taken.contains($0) } ?? ReservedHandles.maximumMatchSlot
    }
}
