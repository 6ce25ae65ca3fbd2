import CNetlink

/// A refusal from libnl or the kernel, naming the object and the operation it concerned.
public struct NetlinkError: Error, Sendable, CustomStringConvertible {
    /// Stable classification of the failure; callers branch on this, never on the text.
    public enum Code: String, Sendable, CustomStringConvertible {
        case notPermitted = "not-permitted"
        case noSuchDevice = "no-such-device"
        case exists
        case notFound = "not-found"
        case unsupported
        case invalid
        case busy
        case socket
        /// The network namespace a condition was made in is gone (or its name now means another).
        case namespaceGone = "namespace-gone"
        case other

        public var description: String { rawValue }
    }

    public var code: Code
    /// What was being done, e.g. `add qdisc netem 7a10: on veth0`.
    public var operation: String
    /// The errno the kernel answered with, when it was the kernel that refused.
    public var errno: Int32
    /// libnl's text for the error (`nl_geterror`), or `strerror` of the errno.
    public var reason: String
    /// The kernel's extended-ack message, when it sent one.
    public var kernelMessage: String?

    public init(code: Code, operation: String, errno: Int32 = 0, reason: String, kernelMessage: String? = nil) {
        self.code = code
        self.operation = operation
        self.errno = errno
        self.reason = reason
        self.kernelMessage = kernelMessage
    }

    public var description: String {
        var text = "\(operation): \(reason)"
        if let kernelMessage, !kernelMessage.isEmpty {
            text += " (kernel: \(kernelMessage))"
        }
        return text
    }
}

extension NetlinkError {
    /// Builds the error for a negative libnl return value, preferring the kernel's own errno and
    /// extack text when the failure came back from the kernel.
    init(libnlCode: Int32, operation: String, refusal: linkcond_kernel_refusal?) {
        let nle = libnlCode < 0 ? -libnlCode : libnlCode
        var kernelErrno: Int32 = 0
        var kernelMessage: String?
        if var refusal, refusal.error != 0 {
            kernelErrno = refusal.error
            let text = withUnsafeBytes(of: &refusal.message) { buffer in
                String(decoding: buffer.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            kernelMessage = text.isEmpty ? nil : text
        }
        let reason = kernelErrno != 0 ? String(cString: strerror(kernelErrno)) : String(cString: nl_geterror(nle))
        self.init(
            code: Self.classify(nle: nle, errno: kernelErrno),
            operation: operation,
            errno: kernelErrno,
            reason: reason,
            kernelMessage: kernelMessage
        )
    }

    static func classify(nle: Int32, errno: Int32) -> Code {
        switch errno {
        case EPERM, EACCES: return .notPermitted
        case ENODEV: return .noSuchDevice
        case EEXIST: return .exists
        case ENOENT: return .notFound
        case EOPNOTSUPP: return .unsupported
        case EINVAL: return .invalid
        case EBUSY: return .busy
        case 0: break
        default: return .other
        }
        switch nle {
        case NLE_PERM, NLE_NOACCESS: return .notPermitted
        case NLE_NODEV: return .noSuchDevice
        case NLE_EXIST: return .exists
        case NLE_OBJ_NOTFOUND: return .notFound
        case NLE_OPNOTSUPP: return .unsupported
        case NLE_INVAL, NLE_MISSING_ATTR, NLE_RANGE: return .invalid
        case NLE_BUSY: return .busy
        case NLE_BAD_SOCK: return .socket
        default: return .other
        }
    }
}
