import Glibc
import Netlink
import Shaping
import Synchronization

/// Test hook: makes the Nth next netlink step fail, or the daemon die there with SIGKILL, to
/// prove rollback and crash recovery at every step on a real kernel. Only wired in when the
/// daemon runs with `--enable-fault-injection`.
public final class FaultSwitch: Sendable {
    public enum Fault: String, Codable, Sendable {
        /// The step fails as if the kernel refused it.
        case fail
        /// The daemon kills itself with SIGKILL instead of running the step.
        case kill
    }

    private let armed = Mutex<(remaining: Int, fault: Fault)?>(nil)
    private let steps = Mutex(0)

    /// Netlink steps run (or faulted) since the daemon started: how a test learns how many
    /// steps a change has, so that a loop over them cannot quietly shrink.
    public var executedSteps: Int { steps.withLock { $0 } }

    public init() {}

    /// Lets `step` steps through, then injects `fault` at the next one, once; `nil` or a
    /// negative step disarms.
    public func arm(atStep step: Int?, fault: Fault = .fail) {
        armed.withLock { $0 = step.flatMap { $0 >= 0 ? ($0, fault) : nil } }
    }

    /// For the step about to run, counted: SIGKILLs the daemon there when armed to, and
    /// otherwise says whether the step is to fail.
    package func failsNextStep() -> Bool {
        switch faultForNextStep() {
        case .kill:
            kill(getpid(), SIGKILL)
            return true
        case .fail:
            return true
        case nil:
            return false
        }
    }

    /// The fault to inject at the step about to run, if any; counts the step otherwise.
    private func faultForNextStep() -> Fault? {
        steps.withLock { $0 += 1 }
        return armed.withLock { armed in
            guard let current = armed else { return nil }
            if current.remaining == 0 {
                armed = nil
                return current.fault
            }
            armed = (current.remaining - 1, current.fault)
            return nil
        }
    }
}

/// A kernel that fails when its `FaultSwitch` says so, and otherwise passes everything on.
package final class FaultInjectingKernel: TrafficControlKernel {
    let wrapped: any TrafficControlKernel
    let faults: FaultSwitch

    package init(wrapping wrapped: any TrafficControlKernel, faults: FaultSwitch) {
        self.wrapped = wrapped
        self.faults = faults
    }

    package func execute(_ step: TrafficStep) throws(NetlinkError) {
        if faults.failsNextStep() {
            throw NetlinkError(
                code: .invalid, operation: "\(step)", errno: EINVAL, reason: "Invalid argument",
                kernelMessage: "fault injected by linkcondd's test hook"
            )
        }
        try wrapped.execute(step)
    }

    package func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
        try wrapped.survey(target)
    }
}

/// Other network namespaces, whose kernels fail when the same `FaultSwitch` says so.
package final class FaultInjectingNamespaces: NamespaceKernels {
    let wrapped: any NamespaceKernels
    let faults: FaultSwitch

    package init(wrapping wrapped: any NamespaceKernels, faults: FaultSwitch) {
        self.wrapped = wrapped
        self.faults = faults
    }

    package func kernel(at path: String, identity: NamespaceIdentity) -> any TrafficControlKernel {
        FaultInjectingKernel(wrapping: wrapped.kernel(at: path, identity: identity), faults: faults)
    }

    package func identity(at path: String) throws(NetlinkError) -> NamespaceIdentity {
        try wrapped.identity(at: path)
    }

    package func path(of identity: NamespaceIdentity) -> String? {
        wrapped.path(of: identity)
    }

    package func routeTables(at path: String) throws(NetlinkError) -> (ipv4: String, ipv6: String) {
        try wrapped.routeTables(at: path)
    }
}
