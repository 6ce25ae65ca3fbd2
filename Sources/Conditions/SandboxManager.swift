import LinkCondVocabulary
import Logging
import Netlink
import Sandboxes

/// Sandboxes of `linkcond run --isolated`: a fresh network namespace the client made, joined to
/// the host by the daemon, conditioned on its `eth0`, and taken apart when its lease ends.
///
/// It decides who may have a sandbox, which addresses it gets, and takes the host's side of it
/// apart; which condition has which sandbox is the registry's. Confined to the `Conditioner`,
/// which calls it inside its transaction.
struct SandboxManager {
    /// Joins namespaces to the host; `nil`: sandboxes are refused.
    let plumbing: (any SandboxPlumbing)?
    let logger: Logger

    /// What a request for a sandbox in the namespace `id` names asks for: the process and its
    /// namespace's path, and the means to join it.
    func request(_ id: ConditionID) throws(ConditionsRefusal) -> (plumbing: any SandboxPlumbing, pid: Int32, path: String) {
        guard let plumbing else { throw ConditionsRefusal(SandboxesUnavailableError()) }
        guard case .process(let pid) = id.namespace, let path = id.namespace?.path else {
            throw ConditionsRefusal(SandboxRequestError(message: "a sandbox is asked for with the condition pid/PID/\(SandboxAddressing.sandboxInterface)"))
        }
        return (plumbing, pid, path)
    }

    /// Process `pid`, when it is `requester`'s own and running, pinned while the caller reads
    /// its owner and then its namespace: both are then known to be of one process.
    func pin(_ pid: Int32, for requester: Requester, with plumbing: any SandboxPlumbing) throws(SandboxError) -> PinnedProcess {
        guard let process = plumbing.pin(process: pid), requester.uid == 0 || process.owner == requester.uid else {
            throw SandboxError(code: .notYours, message: "process \(pid) is not yours: a sandbox is made only of your own process's namespace")
        }
        return process
    }

    /// The namespace at `path` was read while its process was pinned: it must still run, and
    /// the namespace must be one made for the purpose (nothing but `lo`).
    func checkFresh(_ process: PinnedProcess, namespaceAt path: String, identity: NamespaceIdentity, with plumbing: any SandboxPlumbing) throws(ConditionsRefusal) {
        guard process.isRunning else {
            throw ConditionsRefusal(SandboxError(code: .notYours, message: "process \(process.pid) exited while its sandbox was being made"))
        }
        try refusing { () throws(SandboxError) in try plumbing.checkFresh(namespaceAt: path, identity: identity) }
    }

    /// The addresses of a new sandbox: the lowest index none of `taken` has.
    func freeAddressing(taken: Set<UInt16>) throws(SandboxError) -> SandboxAddressing {
        guard let index = (0...SandboxAddressing.maximumIndex).first(where: { !taken.contains($0) }) else {
            throw SandboxError(code: .exhausted, message: "all \(Int(SandboxAddressing.maximumIndex) + 1) sandboxes are in use")
        }
        return SandboxAddressing(index: index)
    }

    /// Joins the namespace at `path` to the host as `sandbox`; on failure nothing of it is left.
    /// Returns what its user should hear of the host's firewall.
    func join(
        _ sandbox: SandboxAddressing, namespaceAt path: String, identity: NamespaceIdentity, with plumbing: any SandboxPlumbing, for requester: Requester
    ) throws(ConditionsRefusal) -> [String] {
        try refusing { () throws(SandboxError) in try plumbing.plumb(sandbox, namespaceAt: path, identity: identity) }
        logger.notice("sandbox \(sandbox.index) for \(requester): \(path) joined to the host as \(sandbox.sandboxAddressText) via \(sandbox.hostInterface) (\(sandbox.hostAddressText))")
        let warnings = plumbing.forwardDropChains().map(\.warning)
        for warning in warnings {
            logger.warning("sandbox \(sandbox.index): \(warning)")
        }
        return warnings
    }

    /// Removes `sandbox`'s objects on the host; whether all went.
    func tearDown(_ sandbox: SandboxAddressing, of id: ConditionID) -> Bool {
        guard let plumbing else { return true }
        let problems = plumbing.tearDown(sandbox)
        for problem in problems {
            logger.error("sandbox \(sandbox.index) of \(id): cannot remove \(problem); a restarted daemon tries again")
        }
        if problems.isEmpty {
            logger.notice("sandbox \(sandbox.index) of \(id) removed (\(sandbox.hostInterface), \(sandbox.natTable))")
        }
        return problems.isEmpty
    }

    /// IPv4 forwarding goes back off where linkcond turned it on (no sandbox needs it now).
    func handOver(_ sandbox: SandboxAddressing) throws(SandboxError) {
        guard let plumbing else { throw SandboxError(code: .plumbingFailed, message: "this linkcondd cannot make sandboxes") }
        try plumbing.handOver(sandbox)
    }

    func restoreForwarding() {
        for problem in plumbing?.restoreForwarding() ?? [] {
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
