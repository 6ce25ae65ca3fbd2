/// A sandbox that could not be made (or checked), with a stable code.
public struct SandboxError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The namespace to plumb is not a fresh one: it has devices besides `lo`.
        case namespaceInUse = "sandbox-namespace-in-use"
        /// The process whose namespace it is belongs to another user.
        case notYours = "sandbox-not-yours"
        /// The kernel refused a device, address or route.
        case plumbingFailed = "sandbox-plumbing-failed"
        /// nftables refused the NAT table.
        case natFailed = "sandbox-nat-failed"
        /// Every sandbox number is taken.
        case exhausted = "sandboxes-exhausted"
    }

    public var code: Code
    public var message: String
    /// nftables' or the kernel's own words, when they gave any.
    public var kernelReason: String?

    public init(code: Code, message: String, kernelReason: String? = nil) {
        self.code = code
        self.message = message
        self.kernelReason = kernelReason
    }

    public var description: String { message }
}
