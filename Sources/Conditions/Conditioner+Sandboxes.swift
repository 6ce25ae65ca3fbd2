import Failures
import LinkCondVocabulary
import Netlink
import Sandboxes

// A sandbox's condition: made with its sandbox, ended with its lease, gone with its sandbox.

extension Conditioner {
    /// The condition of a new sandbox in the namespace of `id`'s process, joined to the host
    /// and in the set, off; its state file names the sandbox before any of it exists.
    func makeSandbox(_ id: ConditionID, for requester: Requester) throws(ConditionsRefusal) -> Condition {
        let (plumbing, pid, path) = try sandboxManager.request(id)
        guard registry[id] == nil else {
            throw ConditionsRefusal(SandboxRequestError(message: "the network namespace of process \(pid) already has a condition (\(id))"))
        }
        guard !registry.isFull else { throw ConditionsRefusal(TooManyConditionsError(limit: ConditionRegistry.maximumCount)) }
        let process = try refusing { () throws(SandboxError) in try sandboxManager.pin(pid, for: requester, with: plumbing) }
        // Fresh first: the daemon's own namespace, say, is in use before it is another id's alias.
        let identity = try namespaces.identity(of: .process(pid))
        try sandboxManager.checkFresh(process, namespaceAt: path, identity: identity, with: plumbing)
        // The namespace read while the process was pinned, not read again.
        var condition = try factory.makeAbsent(id, identity: identity, checkingInterface: false, beside: registry, now: now)
        let taken = Set(registry.all.compactMap { $0.sandbox?.index })
        let sandbox = try refusing { () throws(SandboxError) in try sandboxManager.freeAddressing(taken: taken) }
        condition.sandbox = sandbox
        insert(condition)
        persist(condition)
        do throws(ConditionsRefusal) {
            condition.sandboxWarnings = try sandboxManager.join(sandbox, namespaceAt: path, identity: identity, with: plumbing, for: requester)
        } catch {
            settle(condition)
            throw error
        }
        return condition
    }

    /// A sandbox's condition ends as a whole with its lease: whatever else was set on it goes
    /// too, so that the sandbox does not outlive its `run`.
    func endSandboxCondition(_ condition: inout Condition) {
        guard condition.sandbox != nil, condition.policy.effective != nil else { return }
        let previous = condition.policy.effective
        do {
            try converge(&condition, to: ConditionPolicy(baselineSince: now), replacingForeign: false)
            record(condition, from: previous, reason: "off", requester: nil, detail: "the sandbox's run ended")
        } catch {
            logger.error("cannot switch the sandbox condition \(condition.id) off: \(error)")
        }
    }

    /// Removes the objects on the host of `condition`'s sandbox, if it has one; whether nothing
    /// of it is left.
    func tearDownSandbox(of condition: Condition) -> Bool {
        condition.sandbox.map { sandboxManager.tearDown($0, of: condition.id) } ?? true
    }

    /// A step's handover: a sandbox's or a gateway device's flows get new NAT mappings (the far
    /// end sees a new source); recorded in the history either way. Only those flows are
    /// linkcond's to map: another condition's are this machine's own sockets.
    func handOverAsStepBegins(_ condition: Condition, step: String) {
        let profile = condition.policy.effective?.profile.name ?? "off"
        if let handover = deviceFlows(of: condition) {
            return handOverDevice(condition, handover, step: step, profile: profile)
        }
        guard let sandbox = condition.sandbox else {
            record(condition, from: profile, to: profile, reason: "handover", requester: nil, detail: "step '\(step)' hands over only a sandbox's or a gateway device's flows; this condition's are this machine's own sockets, not linkcond's to map")
            return
        }
        do {
            try sandboxManager.handOver(sandbox)
            logger.notice("\(condition.id): step '\(step)' handed sandbox \(sandbox.index)'s flows over to new mappings")
            record(condition, from: profile, to: profile, reason: "handover", requester: nil, detail: "step '\(step)': the sandbox's flows continue from a new address and port")
        } catch {
            record(condition, from: profile, to: profile, reason: "handover", requester: nil, detail: "step '\(step)' could not hand over: \(error)")
        }
    }

    /// The handover of a gateway device's condition (`--device`); `nil` for any other.
    func deviceFlows(of condition: Condition) -> DeviceFlows? {
        guard case .match(_, let match) = condition.slot, match.isDevice else { return nil }
        let addresses = match.networks.map(\.address)
        return DeviceFlows(addresses: addresses, interface: condition.id.interface, condition: condition.id.description)
    }

    private func handOverDevice(_ condition: Condition, _ handover: DeviceFlows, step: String, profile: String) {
        do {
            guard let resetter else { throw NetlinkError(code: .unsupported, operation: "hand over", reason: "this linkcondd cannot change connections") }
            let moved = try resetter.handOver(handover, inNamespace: try namespaceOfDevice(condition))
            logger.notice("\(condition.id): step '\(step)' handed the device's \(moved) flow(s) over to new mappings (table inet \(handover.table))")
            record(condition, from: profile, to: profile, reason: "handover", requester: nil, detail: "step '\(step)': the device's flows continue from a new address and port (\(moved) tracked flow(s) moved; an untracked one moves with its next packet)")
        } catch {
            record(condition, from: profile, to: profile, reason: "handover", requester: nil, detail: "step '\(step)' could not hand over: \(error)")
        }
    }

    /// The NAT a device's handover left goes with its condition.
    func endDeviceFlows(of condition: Condition) {
        guard let handover = deviceFlows(of: condition), let resetter else { return }
        do {
            try resetter.removeTable(handover, inNamespace: try namespaceOfDevice(condition))
        } catch {
            logger.warning("\(condition.id): cannot remove the handover's table inet \(handover.table): \(error)")
        }
    }

    /// The namespace of a device's condition, `nil` for the daemon's own; never the daemon's own
    /// in its stead.
    private func namespaceOfDevice(_ condition: Condition) throws(NetlinkError) -> (path: String, identity: NamespaceIdentity)? {
        guard let reference = condition.id.namespace else { return nil }
        guard let identity = condition.namespaceIdentity else {
            throw NetlinkError(code: .namespaceGone, operation: "find the namespace of \(condition.id)", reason: "its network namespace is not known")
        }
        return (reference.path, identity)
    }

    /// IPv4 forwarding goes back off where linkcond turned it on, once no sandbox needs it.
    func restoreForwardingIfNoSandbox(stopping: Bool = false) {
        guard stopping || !registry.all.contains(where: { $0.sandbox != nil }) else { return }
        sandboxManager.restoreForwarding()
    }
}
