#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Logging
import Netlink
import Shaping

/// Makes the conditions the registry is to hold: each on its target's tree, shared with the
/// target's other conditions (through an engine inside its network namespace for another
/// one), with its state file, and for a match the slot it takes. Makes; never inserts.
struct ConditionFactory {
    let engine: ShapingEngine
    let planner: Planner
    let namespaces: NamespaceDirectory
    let stateDirectory: String?
    let logger: Logger

    /// A condition for `id`, off since `now`, on its target's shared tree; one with a match takes
    /// `stored` (its slot before a restart) when that is free on the target, else the lowest free
    /// one, and for a host name matches `hostAddresses`.
    func make(
        _ id: ConditionID, identity: NamespaceIdentity?, slot stored: UInt16? = nil, hostAddresses: [[UInt8]] = [],
        beside registry: ConditionRegistry, now: Date
    ) -> Condition {
        let convergence = registry.tree(of: id) ?? {
            var engine = self.engine
            if let namespace = id.namespace, let identity {
                engine = namespaces.engine(at: namespace.path, identity: identity, else: engine)
            }
            return KernelConvergence(target: ShapingTarget(interface: id.interface), planner: planner, engine: engine, logger: logger)
        }()
        var slot = ConditionSlot.whole
        if let peer = id.peer {
            slot = .match(registry.freeSlot(on: convergence, preferring: stored), PeerMatch(peer, hostAddresses: hostAddresses))
        }
        return Condition(
            id: id, namespaceIdentity: identity, convergence: convergence, slot: slot,
            stateStore: stateDirectory.map { StateStore(directory: $0, condition: id) }, offSince: now
        )
    }

    /// A condition not (yet) held, off, on an interface that exists, in a namespace that does:
    /// `known`, when the caller has read its identity already, else the one its path names now.
    /// Refused when it would be another name for a held one, or match what a held one matches.
    func makeAbsent(
        _ id: ConditionID, identity known: NamespaceIdentity? = nil, checkingInterface: Bool = true, hostAddresses: [[UInt8]] = [],
        beside registry: ConditionRegistry, now: Date
    ) throws(ConditionsRefusal) -> Condition {
        var identity: NamespaceIdentity?
        if let namespace = id.namespace {
            identity = if let known { known } else { try namespaces.identity(of: namespace) }
            if namespaces.isDaemonsOwn(identity) {
                throw ConditionsRefusal(AliasedConditionError(requested: id, existing: ConditionID(interface: id.interface)))
            }
            if let twin = registry.alias(of: id, in: identity) {
                throw ConditionsRefusal(AliasedConditionError(requested: id, existing: twin.id))
            }
        }
        let condition = make(id, identity: identity, hostAddresses: hostAddresses, beside: registry, now: now)
        if case .match(_, let match) = condition.slot, let twin = registry.overlapping(match, on: condition.convergence) {
            throw ConditionsRefusal(OverlappingPeerError(requested: id, existing: twin.id))
        }
        if checkingInterface, try refusing({ () throws(ShapingError) in try condition.convergence.survey() }).interface == nil {
            throw ConditionsRefusal(UnknownInterfaceError(interface: id.interface, namespace: id.namespace))
        }
        return condition
    }
}
