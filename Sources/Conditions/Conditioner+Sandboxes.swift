import LinkCondVocabulary
import Netlink
import Sandboxes
import Shaping

// Sandboxes of `linkcond run --isolated`: a fresh network namespace the client made, joined to
// the host by the daemon, conditioned on its `eth0`, and taken apart when the lease ends.

extension Conditioner {
    /// The condition of a new sandbox in the namespace of `id`'s process, joined to the host
    /// and in the set, off; its state file names the sandbox before any of it exists.
    package func makeSandbox(_ id: ConditionID, for requester: Requester) throws -> Condition {
        guard let sandboxes else { throw SandboxesUnavailableError() }
        guard case .process(let pid) = id.namespace, let path = id.namespace?.path else {
            throw SandboxRequestError(message: "a sandbox is asked for with the condition pid/PID/\(SandboxAddressing.sandboxInterface)")
        }
        guard registry[id] == nil else {
            throw SandboxRequestError(message: "the network namespace of process \(pid) already has a condition (\(id))")
        }
        guard !registry.isFull else { throw TooManyConditionsError(limit: ConditionRegistry.maximumCount) }
        // Pinned while its owner and then its namespace are read: both are of one process.
        let process = sandboxes.pin(process: pid)
        guard let process, requester.uid == 0 || process.owner == requester.uid else {
            throw SandboxError(code: .notYours, message: "process \(pid) is not yours: a sandbox is made only of your own process's namespace")
        }
        // Fresh first: the daemon's own namespace, say, is in use before it is another id's alias.
        let identity = try self.identity(of: .process(pid))
        guard process.isRunning else {
            throw SandboxError(code: .notYours, message: "process \(pid) exited while its sandbox was being made")
        }
        try sandboxes.checkFresh(namespaceAt: path, identity: identity)
        // The namespace read while the process was pinned, not read again.
        let condition = try absentCondition(id, identity: identity, checkingInterface: false)
        let taken = Set(registry.all.compactMap { $0.sandbox?.index })
        guard let index = (0...SandboxAddressing.maximumIndex).first(where: { !taken.contains($0) }) else {
            throw SandboxError(code: .exhausted, message: "all \(Int(SandboxAddressing.maximumIndex) + 1) sandboxes are in use")
        }
        let sandbox = SandboxAddressing(index: index)
        condition.sandbox = sandbox
        insert(condition)
        persist(condition)
        do {
            try sandboxes.plumb(sandbox, namespaceAt: path, identity: identity)
        } catch {
            dropIfIdle(condition)
            throw error
        }
        logger.notice("sandbox \(index) for \(requester): \(path) joined to the host as \(sandbox.sandboxAddressText) via \(sandbox.hostInterface) (\(sandbox.hostAddressText))")
        condition.sandboxWarnings = sandboxes.forwardDropChains().map(\.warning)
        for warning in condition.sandboxWarnings {
            logger.warning("sandbox \(index): \(warning)")
        }
        return condition
    }

    /// A sandbox's condition ends as a whole with its lease: whatever else was set on it goes
    /// too, so that the sandbox does not outlive its `run`.
    package func endSandboxCondition(_ condition: Condition) {
        guard condition.sandbox != nil, condition.policy.effective != nil else { return }
        let previous = condition.policy.effective
        do {
            try converge(condition, to: ConditionPolicy(baselineSince: now), replacingForeign: false)
            record(condition, from: previous, reason: "off", requester: nil, detail: "the sandbox's run ended")
        } catch {
            logger.error("cannot switch the sandbox condition \(condition.id) off: \(error)")
        }
    }

    /// Removes the objects on the host of `condition`'s sandbox, if it has one; whether nothing
    /// of it is left.
    package func tearDownSandbox(of condition: Condition) -> Bool {
        condition.sandbox.map { tearDown($0, of: condition) } ?? true
    }

    /// Removes `sandbox`'s objects on the host; whether all went.
    package func tearDown(_ sandbox: SandboxAddressing, of condition: Condition) -> Bool {
        guard let sandboxes else { return true }
        let problems = sandboxes.tearDown(sandbox)
        for problem in problems {
            logger.error("sandbox \(sandbox.index) of \(condition.id): cannot remove \(problem); a restarted daemon tries again")
        }
        if problems.isEmpty {
            logger.notice("sandbox \(sandbox.index) of \(condition.id) removed (\(sandbox.hostInterface), \(sandbox.natTable))")
        }
        return problems.isEmpty
    }

    /// IPv4 forwarding goes back off where linkcond turned it on, once no sandbox needs it.
    package func restoreForwardingIfNoSandbox(stopping: Bool = false) {
        guard let sandboxes, stopping || !registry.all.contains(where: { $0.sandbox != nil }) else { return }
        for problem in sandboxes.restoreForwarding() {
            logger.error("cannot restore \(problem)")
        }
    }
}

/// This daemon was made without a way to join sandboxes to the host (a test's).
public struct SandboxesUnavailableError: Error, Sendable, CustomStringConvertible {
    public var description: String { "this linkcondd cannot make sandboxes" }
}

/// A sandbox request that cannot be one.
public struct SandboxRequestError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
