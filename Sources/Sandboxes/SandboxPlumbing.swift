import Netlink

/// Joins a fresh network namespace to the host for `linkcond run --isolated`: a veth pair,
/// addresses, a default route, NAT and forwarding. Only the daemon's own objects are touched,
/// named after the sandbox's number, so that a restarted daemon can remove them by name.
public protocol SandboxPlumbing: AnyObject {
    /// Process `pid`, held so that what is read of it later is known to be its own, with its
    /// owner; `nil` once it has exited.
    func pin(process pid: Int32) -> PinnedProcess?
    /// Fails with `namespaceInUse` unless the namespace has no device but `lo`: only a
    /// namespace made for the purpose is plumbed, never a container's or the host's.
    func checkFresh(namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError)
    /// Joins the namespace to the host as `sandbox`; on failure nothing of it is left.
    func plumb(_ sandbox: SandboxAddressing, namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError)
    /// Removes what `plumb` made on the host (the pair goes from the sandbox with it); what was
    /// already gone is no problem. Returns what could not be removed.
    func tearDown(_ sandbox: SandboxAddressing) -> [String]
    /// Chains of the host's firewall that drop what a sandbox sends (its user is warned); empty
    /// when none is found or the ruleset cannot be read.
    func forwardDropChains() -> [ForwardDropChain]
    /// A test hook (fault injection): asked before each kernel step of `plumb` with what the
    /// step does; `true` fails the step as the kernel's refusal would.
    var stepFault: (@Sendable (_ step: String) -> Bool)? { get set }
    /// A handover, as from Wi-Fi to LTE: the address and port the far end sees of each of the
    /// sandbox's flows change (their NAT mappings are dropped and made anew on their next packet),
    /// so that datagrams go on from a new source and TCP connections break.
    func handOver(_ sandbox: SandboxAddressing) throws(SandboxError)
    /// No sandbox is left: IPv4 forwarding goes back off where linkcond turned it on.
    /// Returns what could not be restored.
    func restoreForwarding() -> [String]
}
