import Conditions
import ControlAPI
import NIOHTTP1
import Profiles
import Sandboxes
import Shaping

/// An error the control API reports as it is: with a code of the API's vocabulary, which decides
/// its HTTP status.
///
/// Every error a request can meet conforms; anything else is a bug, answered with a 500.
protocol ControlAPIError: Error {
    var errorCode: ErrorCode { get }
    var errorMessage: String { get }
    /// Names that were probably meant, for `unknown-profile`.
    var errorSuggestions: [String]? { get }
    /// For 405: the methods the path does allow.
    var allowedMethods: [HTTPMethod] { get }
    /// For `bad-profile`: where in the given profile the problem is.
    var errorProblem: ProfileProblem? { get }
}

extension ControlAPIError {
    var httpStatus: HTTPResponseStatus { errorCode.httpStatus }
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
    var errorCode: ErrorCode
    var errorMessage: String
    var allowedMethods: [HTTPMethod] = []
    var errorProblem: ProfileProblem?

    init(_ code: ErrorCode, _ message: String) {
        self.errorCode = code
        self.errorMessage = message
    }

    static func badRequest(_ message: String) -> ControlError {
        ControlError(.badRequest, message)
    }

    /// A profile given with the request that a profile file could not be either.
    static func badProfile(_ error: ProfileError) -> ControlError {
        var refusal = ControlError(.badProfile, error.description)
        refusal.errorProblem = ProfileProblem(error)
        return refusal
    }
}

/// What names a catalog's items in the API's refusals.
protocol NamedInRefusals: CatalogItem {
    static var unknownNameCode: ErrorCode { get }
}

extension Profile: NamedInRefusals {
    static var unknownNameCode: ErrorCode { .unknownProfile }
}

extension Scenario: NamedInRefusals {
    static var unknownNameCode: ErrorCode { .unknownScenario }
}

extension UnknownNameError: ControlAPIError where Item: NamedInRefusals {
    var errorCode: ErrorCode { Item.unknownNameCode }
    var errorSuggestions: [String]? { suggestions }
}

extension LeaseConflictError: ControlAPIError {
    var errorCode: ErrorCode { .leaseHeld }
}

extension NoLeaseError: ControlAPIError {
    var errorCode: ErrorCode { .noLease }
}

extension DaemonStoppingError: ControlAPIError {
    var errorCode: ErrorCode { .stopping }
}

extension LeaseDurationError: ControlAPIError {
    var errorCode: ErrorCode { .badRequest }
    var errorMessage: String { "lease duration \(description)" }
}

extension ShapingError: ControlAPIError {
    var errorCode: ErrorCode {
        switch code {
        case .interfaceMissing: .interfaceMissing
        case .foreignQdisc: .foreignQdisc
        case .ifbNameTaken: .ifbNameTaken
        case .missingKernelModule: .missingKernelModule
        case .notPermitted: .notPermitted
        case .kernelRefused: .kernelRefused
        case .namespaceGone: .namespaceGone
        }
    }
}

extension UnknownInterfaceError: ControlAPIError {
    var errorCode: ErrorCode { .unknownInterface }
}

extension NoDefaultRouteInNamespaceError: ControlAPIError {
    var errorCode: ErrorCode { .unknownInterface }
}

extension TooManyConditionsError: ControlAPIError {
    var errorCode: ErrorCode { .tooManyConditions }
}

extension LoopbackConditionError: ControlAPIError {
    var errorCode: ErrorCode { .loopback }
}

extension UnknownNamespaceError: ControlAPIError {
    var errorCode: ErrorCode { .unknownNamespace }
}

extension NamespaceTargetsUnavailableError: ControlAPIError {
    var errorCode: ErrorCode { .namespacesUnavailable }
}

extension AliasedConditionError: ControlAPIError {
    var errorCode: ErrorCode { .aliasedCondition }
}

extension OverlappingPeerError: ControlAPIError {
    var errorCode: ErrorCode { .overlappingPeer }
}

extension SandboxError: ControlAPIError {
    var errorCode: ErrorCode {
        switch code {
        case .notYours: .sandboxNotYours
        case .namespaceInUse: .sandboxNamespaceInUse
        case .exhausted: .sandboxesExhausted
        case .plumbingFailed: .sandboxPlumbingFailed
        case .natFailed: .sandboxNATFailed
        }
    }
}

extension SandboxesUnavailableError: ControlAPIError {
    var errorCode: ErrorCode { .sandboxesUnavailable }
}

extension SandboxRequestError: ControlAPIError {
    var errorCode: ErrorCode { .sandboxRequest }
}

extension HostNameError: ControlAPIError {
    var errorCode: ErrorCode {
        switch code {
        case .notFound: .unknownHost
        case .unavailable: .hostLookupFailed
        case .timedOut: .hostLookupTimedOut
        case .tooManyAddresses: .tooManyAddresses
        case .loopback: .loopbackHost
        }
    }
}

extension NoScenarioError: ControlAPIError {
    var errorCode: ErrorCode { finished ? .scenarioOver : .noScenario }
}

extension ScenarioStepError: ControlAPIError {
    var errorCode: ErrorCode { .scenarioStep }
}
