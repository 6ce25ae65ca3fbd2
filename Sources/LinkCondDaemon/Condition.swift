import ControlAPI
import Netlink
import NIOCore
import Shaping

/// One condition: what should be in force on its target, the kernel objects there, the file
/// that keeps the goal across a crash, and its lease's timer.
///
/// Confined to the `Conditioner` actor, which changes one condition at a time; a change to one
/// condition reads and writes only that condition's kernel objects and state file.
final class Condition {
    /// Runtime companions of the current lease: its expiry timer, and for a client-bound lease
    /// the way to tell its client that it ended.
    struct LeaseRuntime {
        var leaseID: UInt64
        var timer: Scheduled<Void>?
        var onEnd: (@Sendable (LeaseEvent) -> Void)?
    }

    let id: ConditionID
    /// For a condition in another network namespace: which namespace, as it was when the
    /// condition was made. Its path naming another one later means this one is gone.
    let namespaceIdentity: NamespaceIdentity?
    let convergence: KernelConvergence
    let stateStore: StateStore?
    var policy = ConditionPolicy()
    var leaseRuntime: LeaseRuntime?

    init(id: ConditionID, namespaceIdentity: NamespaceIdentity? = nil, convergence: KernelConvergence, stateStore: StateStore?) {
        self.id = id
        self.namespaceIdentity = namespaceIdentity
        self.convergence = convergence
        self.stateStore = stateStore
    }

    var target: ShapingTarget { convergence.target }

    /// Neither a profile nor a lease, nor anything of ours in the kernel that this daemon knows of.
    var isIdle: Bool {
        policy.effective == nil && policy.lease == nil && leaseRuntime == nil && convergence.applied == nil
    }
}
