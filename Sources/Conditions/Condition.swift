#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Netlink
import NIOCore
import Profiles
import Sandboxes
import Shaping

/// One condition: what should be in force on its target, the kernel objects there, the file
/// that keeps the goal across a crash, and its lease's timer.
///
/// A value: the `Conditioner` takes a condition out of its registry, changes it in one
/// transaction, and settles it back (or drops it, idle); a change to one condition reads and
/// writes only that condition's kernel objects and state file.
package struct Condition {
    /// Runtime companions of the current lease: its expiry timer, and for a client-bound lease
    /// the way to tell its client that it ended.
    struct LeaseRuntime {
        var leaseID: UInt64
        var timer: Scheduled<Void>?
        var onEnd: (@Sendable (LeaseEnd) -> Void)?
    }

    let id: ConditionID
    /// For a condition in another network namespace: which namespace, as it was when the
    /// condition was made. Its path naming another one later means this one is gone.
    let namespaceIdentity: NamespaceIdentity?
    /// Shared with the other conditions of the same target.
    let convergence: KernelConvergence
    /// Where this condition's objects are in the target's tree.
    let slot: ConditionSlot
    let stateStore: StateStore?
    var policy: ConditionPolicy
    var leaseRuntime: LeaseRuntime?
    /// The scenario playing on the condition, if any.
    var scenario: ScenarioRun?
    /// The trace-driven profile in force, playing, if any.
    var trace: TracePlayback?
    /// For the condition of a `run --isolated` sandbox: the sandbox, which ends with it.
    var sandbox: SandboxAddressing?
    /// What the sandbox's user is told of the host when it is made (a firewall that drops its traffic).
    var sandboxWarnings: [String] = []

    init(
        id: ConditionID, namespaceIdentity: NamespaceIdentity? = nil, convergence: KernelConvergence, slot: ConditionSlot = .whole,
        stateStore: StateStore?, offSince: Date
    ) {
        self.id = id
        self.policy = ConditionPolicy(baselineSince: offSince)
        self.namespaceIdentity = namespaceIdentity
        self.convergence = convergence
        self.slot = slot
        self.stateStore = stateStore
    }

    var target: ShapingTarget { convergence.target }

    /// For a peer named by a host name: the addresses the condition matches, what the name
    /// resolved to when the condition was made.
    var hostAddresses: [[UInt8]]? {
        guard id.peer?.hostName != nil, case .match(_, let match) = slot else { return nil }
        return match.networks.map(\.address)
    }

    /// A condition for a host name matches nothing until it has its addresses: made by a
    /// request without them (it came in while another one ended the condition), it cannot be
    /// put in force.
    func checkHostAddresses() throws(HostNameError) {
        guard let name = id.peer?.hostName, hostAddresses?.isEmpty != false else { return }
        throw HostNameError(name: name, code: .unavailable, detail: "its condition ended while its addresses were looked up")
    }

    /// The slot number of a condition with a match, `nil` for the whole interface.
    var slotNumber: UInt16? {
        if case .match(let number, _) = slot { return number }
        return nil
    }

    /// Brings this condition's objects to `profile`, leaving the target's other conditions' alone.
    func converge(to profile: Profile?, replacingForeign: Bool) throws(ShapingError) {
        try convergence.converge(slot, to: profile, replacingForeign: replacingForeign)
    }

    /// Neither a profile nor a lease, nor anything of ours in the kernel that this daemon knows of.
    var isIdle: Bool {
        policy.effective == nil && policy.lease == nil && leaseRuntime == nil && convergence.profile(in: slot) == nil
    }
}
