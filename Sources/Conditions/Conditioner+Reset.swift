import Failures
import LinkCondVocabulary
import Netlink
import Profiles
import Shaping

// Resets: a condition's TCP connections ended now, as when the system reclaims an app's socket
// or the network changes under it.

/// What a reset did to a condition's connections, and the condition as it is.
public struct ResetReport: Sendable {
    public var condition: ConditionSnapshot
    /// Which connections it took: `TCP connections with 192.0.2.7:443`.
    public var connections: String
    public var outcome: ResetOutcome
}

extension Conditioner {
    /// `linkcond reset`: destroys the TCP connections of the condition `id` names (held or not:
    /// a reset changes no condition), in its target's network namespace: each local socket fails
    /// with ECONNABORTED at once and its far end gets a reset; new connections work. The
    /// management exemptions are never reset. A lease held by someone else is a conflict unless
    /// `force`.
    public func reset(on id: ConditionID? = nil, by requester: Requester, force: Bool = false) throws(ConditionsRefusal) -> ResetReport {
        try checkRunning()
        let resolvedID = try resolved(id)
        let held = try heldCondition(resolvedID)
        let condition = if let held { held } else { try factory.makeAbsent(resolvedID, beside: registry, now: now) }
        try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        let selection = try connectionSelection(of: condition, held: held != nil)
        let outcome = try resetConnections(selection, of: condition)
        let profile = condition.policy.effective?.profile.name ?? "off"
        record(
            condition, from: profile, to: profile, reason: "reset", requester: requester,
            detail: "reset \(outcome.reset): \(selection)" + (outcome.alreadyGone > 0 ? "; \(outcome.alreadyGone) more ended on their own first" : "")
        )
        return ResetReport(condition: snapshot(of: condition), connections: selection.description, outcome: outcome)
    }

    /// A scenario step that resets (`reset: true`) as it begins: the condition's connections end
    /// now. A refusal (a kernel that cannot) is logged and recorded; the scenario plays on.
    func resetAsStepBegins(_ condition: Condition, step: String) {
        let profile = condition.policy.effective?.profile.name ?? "off"
        do throws(ConditionsRefusal) {
            let selection = try connectionSelection(of: condition, held: true)
            let outcome = try resetConnections(selection, of: condition)
            record(condition, from: profile, to: profile, reason: "reset", requester: nil, detail: "reset \(outcome.reset): \(selection), as step '\(step)' began")
        } catch {
            logger.error("scenario step '\(step)' on \(condition.id) could not reset connections: \(error)")
            record(condition, from: profile, to: profile, reason: "reset", requester: nil, detail: "step '\(step)' could not reset connections: \(error)")
        }
    }

    /// A failure that comes into force takes the condition's established connections with it,
    /// as airplane mode or a crashed server does: reset now (the rules already in place answer
    /// anything the far end still sends), so that an app blocked in a read learns of it at once
    /// rather than on its next write. Where connections cannot be reset, the rules alone fail
    /// them on their next segment.
    func resetAsFailureBegins(_ condition: Condition, _ failure: ConnectionFailure) {
        do throws(ConditionsRefusal) {
            let selection = try connectionSelection(of: condition, held: true)
            let outcome = try resetConnections(selection, of: condition)
            logger.notice("\(condition.id): \(failure.rawValue) began; reset \(outcome.reset) established connection(s): \(selection)")
        } catch {
            logger.info("\(condition.id): \(failure.rawValue) began; its established connections fail on their next segment (\(error))")
        }
    }

    /// The condition held for `id`, or for the same device of the same namespace under another
    /// name (a sandbox's, named by its command's PID rather than the one it was made with).
    func heldCondition(_ id: ConditionID) throws(ConditionsRefusal) -> Condition? {
        if let held = registry[id] { return held }
        guard let namespace = id.namespace else { return nil }
        return registry.condition(sameAs: id, in: try namespaces.identity(of: namespace))
    }

    /// The connections a reset of `condition` takes: its peer's, its interface's, its
    /// namespace's, or a gateway device's through this machine, never the management exemptions'.
    func connectionSelection(of condition: Condition, held: Bool) throws(ConditionsRefusal) -> ConnectionSelection {
        switch condition.slot {
        case .match(_, let match):
            if match.isDevice, let device = deviceFlows(of: condition) {
                return ConnectionSelection(.forwardedFor(device), exemptions: planner.exemptions)
            }
            if condition.id.peer?.hostName != nil, !held {
                throw ConditionsRefusal(ResetError(
                    reason: .needsAddresses, condition: condition.id,
                    detail: "no condition holds the addresses of this host name; name its address, or reset while its condition is active"
                ))
            }
            return ConnectionSelection(.peer(match), exemptions: planner.exemptions)
        case .whole:
            guard condition.id.namespace == nil else { return ConnectionSelection(.leavingTheNamespace, exemptions: planner.exemptions) }
            let addresses = resetter?.addresses(of: condition.id.interface) ?? []
            return ConnectionSelection(.localAddresses(addresses), exemptions: planner.exemptions)
        }
    }

    func resetConnections(_ selection: ConnectionSelection, of condition: Condition) throws(ConditionsRefusal) -> ResetOutcome {
        guard let resetter else {
            throw ConditionsRefusal(ResetError(reason: .unavailable, condition: condition.id, detail: "this linkcondd cannot reset connections"))
        }
        var namespace: (path: String, identity: NamespaceIdentity)?
        if let reference = condition.id.namespace {
            // Never the daemon's own namespace in its stead, where a namespace's scope would take every connection.
            guard let identity = condition.namespaceIdentity else {
                throw ConditionsRefusal(ResetError(reason: .namespaceGone, condition: condition.id, detail: "its network namespace is not known"))
            }
            namespace = (reference.path, identity)
        }
        do {
            return try resetter.reset(selection, inNamespace: namespace)
        } catch {
            let reason: ResetError.Reason = switch error.code {
            case .unsupported: .unavailable
            case .notPermitted: .notPermitted
            case .namespaceGone: .namespaceGone
            default: .kernelRefused
            }
            logger.error("reset on \(condition.id): \(error)")
            throw ConditionsRefusal(ResetError(reason: reason, condition: condition.id, detail: "\(error)"))
        }
    }
}
