#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import LinkCondVocabulary
import Logging
import Netlink
import Profiles
import Sandboxes
import Shaping

// Start and stop: what the state files say was wanted, brought back; every condition removed
// on a graceful stop.

extension Conditioner {
    /// Brings the kernel to what the state files say was wanted when the previous daemon ended,
    /// for the default condition and every other one that had a state file: a lease still
    /// valid, else the baseline, else nothing. A tree that is exactly the wanted one is
    /// re-adopted (its values rewritten); anything less is rebuilt or removed.
    ///
    /// The default condition's failure is thrown (the daemon cannot serve its interface);
    /// another condition that cannot be brought back is logged, removed and forgotten.
    public func recover() throws(ShapingError) {
        var recovering = [defaultCondition]
        for id in StateStore.storedConditions(in: stateDirectory) where id != defaultID && !registry.isFull {
            guard let condition = recoverableCondition(id) else { continue }
            insert(condition)
            recovering.append(condition)
        }
        for index in recovering.indices {
            // A sandbox's `run` lost its lease with the previous daemon: the sandbox ends.
            let condition = recovering[index]
            let stored = condition.sandbox == nil ? condition.stateStore?.load() : nil
            recovering[index].policy = stored?.recoveredPolicy(for: condition.id, now: now, leaseID: nextLeaseID, logger: logger)
                ?? ConditionPolicy(baselineSince: now)
            persist(recovering[index])
        }
        // One recovery per target, with every condition on it, default target first.
        for (convergence, var group) in recovering.groupedByTree() {
            do {
                try recover(convergence, with: &group)
            } catch {
                if group.contains(where: { $0.id == defaultID }) {
                    group.forEach { registry.update($0) }
                    throw error
                }
                logger.error("startup: cannot bring back the conditions on \(convergence.target.interface): \(error.message); removing them")
                try? convergence.removeAll()
                for index in group.indices {
                    group[index].policy = ConditionPolicy(baselineSince: now)
                    record(group[index], from: nil, to: "off", reason: "startup", requester: nil, detail: "could not be brought back: \(error.message)")
                }
            }
            group.forEach(settle)
        }
        let ownTables = Set(registry.all.filter { $0.id.namespace == nil }.map { FailureRuleset.tableName(for: $0.target.interface) })
        for table in defaultCondition.convergence.removeFailureTables(except: ownTables) {
            logger.notice("startup: removed the nftables table inet \(table), which no condition holds")
        }
        let ownDeviceTables = Set(registry.all.filter { $0.id.namespace == nil }.compactMap { deviceFlows(of: $0)?.table })
        for table in resetter?.removeDeviceTables(except: ownDeviceTables) ?? [] {
            logger.notice("startup: removed the nftables table inet \(table), which no device's condition holds")
        }
        restoreForwardingIfNoSandbox()
    }

    /// Graceful stop: ends every lease (telling a waiting client why), removes all shaping,
    /// forgets the state. After it, every change is refused. Throws the first failure, after
    /// trying every condition.
    public func shutdown() throws(ShapingError) {
        stopping = true
        var failure: ShapingError?
        for var condition in orderedConditions {
            defer { registry.update(condition) }
            let runtime = stopRuntime(of: &condition)
            let previous = condition.policy.effective
            let lease = condition.policy.lease
            condition.policy = condition.policy.wanting(baseline: nil, lease: nil, now: now)
            do {
                try condition.convergence.removeAll()
                endDeviceFlows(of: condition)
                if tearDownSandbox(of: condition) {
                    condition.stateStore?.remove()
                }
            } catch {
                logger.error("stopping: \(error)")
                failure = failure ?? error
            }
            runtime?.onEnd?(LeaseEnd(reason: .shutdown, condition: snapshot(of: condition)))
            if previous != nil {
                let detail = lease.map { "ended the lease on '\($0.entry.profile.name)' held by \($0.holder)" }
                record(condition, from: previous?.profile.name, to: "off", reason: "shutdown", requester: nil, detail: detail)
            }
        }
        restoreForwardingIfNoSandbox(stopping: true)
        if let failure { throw failure }
    }

    /// A condition a state file names, when it can be brought back: one in another network
    /// namespace only while that namespace is the one it was made in. One whose namespace
    /// ended while no daemon ran is recorded as ended, and its file goes.
    func recoverableCondition(_ id: ConditionID) -> Condition? {
        let store = stateDirectory.map { StateStore(directory: $0, condition: id) }
        let state = store?.load()
        let hostAddresses = state?.hostAddresses?.compactMap(parseIPAddress) ?? []
        guard let namespace = id.namespace else {
            return factory.make(id, identity: nil, slot: state?.slot, hostAddresses: hostAddresses, beside: registry, now: now)
        }
        let stored = state?.namespaceIdentity
        let current = try? namespaces.identity(of: namespace)
        let sandbox = state?.sandbox.flatMap { $0 <= SandboxAddressing.maximumIndex ? SandboxAddressing(index: $0) : nil }
        guard let stored, let current, stored == current else {
            let condition = factory.make(id, identity: stored, beside: registry, now: now)
            let detail = namespaces.endOfNamespace(condition, gone: "\(namespace.path) ended while no daemon ran")
            logger.notice("startup: the network namespace of \(id) is gone; its condition ended with it (\(detail))")
            record(condition, from: nil, to: "off", reason: "namespace-ended", requester: nil, detail: detail)
            if let sandbox, !sandboxManager.tearDown(sandbox, of: id) { return nil }
            store?.remove()
            return nil
        }
        var condition = factory.make(id, identity: current, slot: state?.slot, hostAddresses: hostAddresses, beside: registry, now: now)
        condition.sandbox = sandbox
        return condition
    }

    /// Brings one target's tree to what its conditions' recovered policies want, and records
    /// for each how.
    func recover(_ convergence: KernelConvergence, with group: inout [Condition]) throws(ShapingError) {
        let interface = convergence.target.interface
        let outcome = try convergence.recover(group)
        for index in group.indices {
            followTraces(&group[index])
        }
        if case .rebuilt(let deviations) = outcome {
            for deviation in deviations.prefix(20) {
                logger.notice("startup: the tree on \(interface) differed: \(deviation)")
            }
        }
        for index in group.indices {
            let condition = group[index]
            guard let how = outcome.startupDetail(wholeInterface: condition.slot == .whole, wanted: condition.policy.effective != nil) else { continue }
            let to = condition.policy.effective?.profile.name ?? "off"
            logger.notice("startup: \(condition.id) on \(interface) is \(to == "off" ? "off" : "'\(to)'"): \(how)")
            record(condition, from: nil, to: to, reason: "startup", requester: nil, detail: how)
            scheduleExpiry(&group[index])
        }
    }

}
