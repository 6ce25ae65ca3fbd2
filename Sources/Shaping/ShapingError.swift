import Netlink

/// Why a condition could not be applied, switched or removed, in terms a user can act on.
public struct ShapingError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CustomStringConvertible {
        case interfaceMissing = "interface-missing"
        case foreignQdisc = "foreign-qdisc"
        case ifbNameTaken = "ifb-name-taken"
        case missingKernelModule = "missing-kernel-module"
        case notPermitted = "not-permitted"
        case kernelRefused = "kernel-refused"
        /// The network namespace of the condition's interface is gone.
        case namespaceGone = "namespace-gone"

        public var description: String { rawValue }
    }

    public var code: Code
    /// One line, for the client to print.
    public var message: String
    /// The step that failed, if a step did.
    public var failedStep: TrafficStep?
    /// The underlying netlink refusal, if any.
    public var netlink: NetlinkError?
    /// Undo steps that failed in turn: empty means the previous condition was fully restored.
    public var rollbackFailures: [String] = []

    public init(code: Code, message: String, failedStep: TrafficStep? = nil, netlink: NetlinkError? = nil) {
        self.code = code
        self.message = message
        self.failedStep = failedStep
        self.netlink = netlink
    }

    public var description: String {
        guard !rollbackFailures.isEmpty else { return message }
        return message + "; rolling back also failed: " + rollbackFailures.joined(separator: "; ")
    }
}

extension ShapingError {
    /// Explains a refused step: a missing module or permission is named as such, anything
    /// else names the object, the operation and the kernel's reason.
    init(step: TrafficStep, refusal: NetlinkError) {
        let reason = refusal.kernelMessage.map { "\(refusal.reason): \($0)" } ?? refusal.reason
        if refusal.code == .namespaceGone {
            self.init(code: .namespaceGone, message: "cannot \(step): \(refusal)", failedStep: step, netlink: refusal)
        } else if refusal.code == .notPermitted && refusal.operation.hasPrefix("enter the network namespace") {
            self.init(
                code: .notPermitted,
                message: "not permitted to \(refusal.operation): linkcondd needs CAP_SYS_ADMIN to shape inside another namespace (\(reason))",
                failedStep: step, netlink: refusal
            )
        } else if refusal.code == .notPermitted {
            self.init(
                code: .notPermitted,
                message: "not permitted to \(step): linkcondd needs root or CAP_NET_ADMIN (\(reason))",
                failedStep: step, netlink: refusal
            )
        } else if let module = Self.missingModule(step: step, refusal: refusal) {
            self.init(
                code: .missingKernelModule,
                message: "the kernel lacks \(module), needed to \(step); load it with 'modprobe \(module.split(separator: " ").first ?? "")' or use a kernel that has it (\(reason))",
                failedStep: step, netlink: refusal
            )
        } else if refusal.code == .noSuchDevice {
            self.init(code: .interfaceMissing, message: "cannot \(step): \(refusal.operation): \(reason)", failedStep: step, netlink: refusal)
        } else {
            self.init(code: .kernelRefused, message: "the kernel refused to \(step): \(reason)", failedStep: step, netlink: refusal)
        }
    }

    /// The module whose absence explains `refusal`, if it does. The kernel answers an unknown
    /// qdisc, classifier or action kind with ENOENT and an unknown link kind with EOPNOTSUPP.
    static func missingModule(step: TrafficStep, refusal: NetlinkError) -> String? {
        let message = refusal.kernelMessage?.lowercased() ?? ""
        let unknownKind = refusal.code == .notFound || refusal.code == .unsupported
        switch step {
        case .addQdisc(_, let node):
            guard unknownKind || message.contains("qdisc kind is unknown") else { return nil }
            return "sch_\(node.settings.kind)"
        case .createIFB:
            return unknownKind ? "ifb" : nil
        case .addFilter(_, let node):
            let classifier = node.flowerHandle == nil ? "cls_u32" : "cls_flower"
            if message.contains("classifier") { return classifier }
            if message.contains("action") { return "act_mirred" }
            guard unknownKind else { return nil }
            if case .redirect = node.target { return "cls_u32 or act_mirred" }
            return classifier
        default:
            return nil
        }
    }

    static func interfaceMissing(_ interface: String) -> ShapingError {
        ShapingError(code: .interfaceMissing, message: "interface \(interface) does not exist")
    }

    static func surveyFailed(_ target: ShapingTarget, _ refusal: NetlinkError) -> ShapingError {
        ShapingError(
            code: refusal.code == .notPermitted ? .notPermitted : refusal.code == .namespaceGone ? .namespaceGone : .kernelRefused,
            message: "cannot read the traffic control state of \(target.interface): \(refusal)",
            netlink: refusal
        )
    }
}
