import ControlAPI
import NIOHTTP1
import Profiles
import Sandboxes
import Shaping

/// An error the control API reports as it is: with its own HTTP status and a stable code.
///
/// Every error a request can meet conforms; anything else is a bug, answered with a 500.
protocol ControlAPIError: Error {
    var httpStatus: HTTPResponseStatus { get }
    var errorCode: String { get }
    var errorMessage: String { get }
    /// Names that were probably meant, for `unknown-profile`.
    var errorSuggestions: [String]? { get }
    /// For 405: the methods the path does allow.
    var allowedMethods: [HTTPMethod] { get }
    /// For `bad-profile`: where in the given profile the problem is.
    var errorProblem: ProfileProblem? { get }
}

extension ControlAPIError {
    var errorSuggestions: [String]? { nil }
    var allowedMethods: [HTTPMethod] { [] }
    var errorProblem: ProfileProblem? { nil }

    var reply: ControlReply {
        let document = ErrorResponse(code: errorCode, message: errorMessage, suggestions: errorSuggestions, problem: errorProblem)
        var reply = ControlReply.json(document, status: httpStatus)
        reply.allow = allowedMethods
        return reply
    }
}

extension ControlAPIError where Self: CustomStringConvertible {
    var errorMessage: String { description }
}

/// A request the router itself refuses: malformed, not allowed, or for nothing it serves.
package struct ControlError: ControlAPIError, Error {
    var httpStatus: HTTPResponseStatus
    var errorCode: String
    var errorMessage: String
    var allowedMethods: [HTTPMethod] = []
    var errorProblem: ProfileProblem?

    init(_ status: HTTPResponseStatus, code: String, message: String) {
        self.httpStatus = status
        self.errorCode = code
        self.errorMessage = message
    }

    static func badRequest(_ message: String) -> ControlError {
        ControlError(.badRequest, code: "bad-request", message: message)
    }

    /// A profile given with the request that a profile file could not be either.
    static func badProfile(_ error: ProfileError) -> ControlError {
        var refusal = ControlError(.badRequest, code: "bad-profile", message: error.description)
        refusal.errorProblem = ProfileProblem(error)
        return refusal
    }
}

/// `unknown-profile`, `unknown-scenario`.
extension UnknownNameError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .notFound }
    var errorCode: String { "unknown-\(Item.kind)" }
    var errorSuggestions: [String]? { suggestions }
}

extension LeaseConflictError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "lease-held" }
}

extension NoLeaseError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "no-lease" }
}

extension DaemonStoppingError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .serviceUnavailable }
    var errorCode: String { "stopping" }
}

extension LeaseDurationError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .badRequest }
    var errorCode: String { "bad-request" }
    var errorMessage: String { "lease duration \(description)" }
}

extension ShapingError: ControlAPIError {
    /// A conflict the user can resolve is a 409, a missing interface a 503, kernel trouble a 500.
    var httpStatus: HTTPResponseStatus {
        switch code {
        case .foreignQdisc, .ifbNameTaken: return .conflict
        case .interfaceMissing: return .serviceUnavailable
        case .namespaceGone: return .gone
        default: return .internalServerError
        }
    }

    var errorCode: String { code.rawValue }
}

extension UnknownInterfaceError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .notFound }
    var errorCode: String { "unknown-interface" }
}

extension TooManyConditionsError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .serviceUnavailable }
    var errorCode: String { "too-many-conditions" }
}

extension LoopbackConditionError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .badRequest }
    var errorCode: String { "loopback" }
}

extension UnknownNamespaceError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .notFound }
    var errorCode: String { "unknown-namespace" }
}

extension NamespaceTargetsUnavailableError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .notImplemented }
    var errorCode: String { "namespaces-unavailable" }
}

extension AliasedConditionError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "aliased-condition" }
}

extension OverlappingPeerError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "overlapping-peer" }
}

extension SandboxError: ControlAPIError {
    /// Someone else's process is a 403, a namespace in use a 409, no free number a 503.
    var httpStatus: HTTPResponseStatus {
        switch code {
        case .notYours: return .forbidden
        case .namespaceInUse: return .conflict
        case .exhausted: return .serviceUnavailable
        case .plumbingFailed, .natFailed: return .internalServerError
        }
    }

    var errorCode: String { code.rawValue }
}

extension SandboxesUnavailableError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .notImplemented }
    var errorCode: String { "sandboxes-unavailable" }
}

extension SandboxRequestError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "sandbox-request" }
}

extension HostNameError: ControlAPIError {
    /// A name with no address, too many, or this machine's own: the request's fault. A
    /// resolver that failed or did not answer: try again.
    var httpStatus: HTTPResponseStatus {
        switch code {
        case .notFound, .tooManyAddresses, .loopback: return .badRequest
        case .unavailable, .timedOut: return .serviceUnavailable
        }
    }

    var errorCode: String { code.rawValue }
}

extension NoScenarioError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { finished ? "scenario-over" : "no-scenario" }
}

extension ScenarioStepError: ControlAPIError {
    var httpStatus: HTTPResponseStatus { .conflict }
    var errorCode: String { "scenario-step" }
}
