import LinkCondVocabulary
import Profiles
import Sandboxes
import Shaping

/// Why the domain refused or failed a command, in the control API's vocabulary: a code, which
/// the HTTP layer turns into a status and the CLI into advice, and a sentence. Each error the
/// `Conditioner`'s commands throw is one, its code given here beside the domain's own errors
/// and those of the modules under it; the HTTP layer answers anything else with a 500.
public protocol ConditionsError: Error, CustomStringConvertible {
    var errorCode: ErrorCode { get }
    /// Names that were probably meant (an unknown profile's or scenario's).
    var errorSuggestions: [String]? { get }
}

extension ConditionsError {
    public var errorSuggestions: [String]? { nil }
}

/// What names a catalog's items in refusals.
public protocol NamedInRefusals: CatalogItem {
    static var unknownNameCode: ErrorCode { get }
}

extension Profile: NamedInRefusals {
    public static var unknownNameCode: ErrorCode { .unknownProfile }
}

extension Scenario: NamedInRefusals {
    public static var unknownNameCode: ErrorCode { .unknownScenario }
}

extension UnknownNameError: ConditionsError where Item: NamedInRefusals {
    public var errorCode: ErrorCode { Item.unknownNameCode }
    public var errorSuggestions: [String]? { suggestions }
}

extension LeaseConflictError: ConditionsError {
    public var errorCode: ErrorCode { .leaseHeld }
}

extension NoLeaseError: ConditionsError {
    public var errorCode: ErrorCode { .noLease }
}

extension DaemonStoppingError: ConditionsError {
    public var errorCode: ErrorCode { .stopping }
}

extension ShapingError: ConditionsError {
    public var errorCode: ErrorCode {
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

extension CaptureRefusal: ConditionsError {
    public var errorCode: ErrorCode {
        switch reason {
        case .tooMany: .tooManyCaptures
        case .namespaceGone: .namespaceGone
        }
    }
}

extension UnknownInterfaceError: ConditionsError {
    public var errorCode: ErrorCode { .unknownInterface }
}

extension NoDefaultRouteInNamespaceError: ConditionsError {
    public var errorCode: ErrorCode { .unknownInterface }
}

extension TooManyConditionsError: ConditionsError {
    public var errorCode: ErrorCode { .tooManyConditions }
}

extension LoopbackConditionError: ConditionsError {
    public var errorCode: ErrorCode { .loopback }
}

extension UnknownNamespaceError: ConditionsError {
    public var errorCode: ErrorCode { .unknownNamespace }
}

extension NamespaceTargetsUnavailableError: ConditionsError {
    public var errorCode: ErrorCode { .namespacesUnavailable }
}

extension AliasedConditionError: ConditionsError {
    public var errorCode: ErrorCode { .aliasedCondition }
}

extension OverlappingPeerError: ConditionsError {
    public var errorCode: ErrorCode { .overlappingPeer }
}

extension SandboxError: ConditionsError {
    public var errorCode: ErrorCode {
        switch code {
        case .notYours: .sandboxNotYours
        case .namespaceInUse: .sandboxNamespaceInUse
        case .exhausted: .sandboxesExhausted
        case .plumbingFailed: .sandboxPlumbingFailed
        case .natFailed: .sandboxNATFailed
        }
    }
}

extension SandboxesUnavailableError: ConditionsError {
    public var errorCode: ErrorCode { .sandboxesUnavailable }
}

extension SandboxRequestError: ConditionsError {
    public var errorCode: ErrorCode { .sandboxRequest }
}

extension HostNameError: ConditionsError {
    public var errorCode: ErrorCode {
        switch code {
        case .notFound: .unknownHost
        case .unavailable: .hostLookupFailed
        case .timedOut: .hostLookupTimedOut
        case .tooManyAddresses: .tooManyAddresses
        case .loopback: .loopbackHost
        }
    }
}

extension NoScenarioError: ConditionsError {
    public var errorCode: ErrorCode { finished ? .scenarioOver : .noScenario }
}

extension ScenarioStepError: ConditionsError {
    public var errorCode: ErrorCode { .scenarioStep }
}

extension ResetError: ConditionsError {
    public var errorCode: ErrorCode {
        switch reason {
        case .unavailable: .resetUnavailable
        case .notPermitted: .notPermitted
        case .namespaceGone: .namespaceGone
        case .kernelRefused: .kernelRefused
        case .needsAddresses: .badRequest
        }
    }
}

extension ReadOnlyProfileError: ConditionsError {
    public var errorCode: ErrorCode { .readOnlyProfile }
}

extension ProfileExistsError: ConditionsError {
    public var errorCode: ErrorCode { .profileExists }
}

extension ProfileNotSavedError: ConditionsError {
    public var errorCode: ErrorCode { .profileNotSaved }
}
