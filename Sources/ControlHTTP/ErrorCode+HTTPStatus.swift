import Conditions
import ControlAPI
import NIOHTTP1

extension ErrorCode {
    /// The status each code is answered with: decided here alone, for every code (docs/api.md's
    /// table says the same, and a unit test holds them to each other).
    var httpStatus: HTTPResponseStatus {
        switch self {
        case .badRequest, .badProfile, .loopback, .unknownHost, .tooManyAddresses, .loopbackHost:
            .badRequest
        case .forbidden, .sandboxNotYours:
            .forbidden
        case .unknownProfile, .unknownScenario, .unknownInterface, .unknownNamespace, .notFound:
            .notFound
        case .methodNotAllowed:
            .methodNotAllowed
        case .requestTimeout:
            .requestTimeout
        case .foreignQdisc, .ifbNameTaken, .leaseHeld, .noLease, .aliasedCondition, .overlappingPeer,
             .sandboxRequest, .sandboxNamespaceInUse, .noScenario, .scenarioOver, .scenarioStep, .readOnlyProfile, .profileExists:
            .conflict
        case .namespaceGone:
            .gone
        case .payloadTooLarge:
            .payloadTooLarge
        case .missingKernelModule, .notPermitted, .kernelRefused, .sandboxPlumbingFailed, .sandboxNATFailed, .profileNotSaved, .internal:
            .internalServerError
        case .namespacesUnavailable, .sandboxesUnavailable, .resetUnavailable:
            .notImplemented
        case .interfaceMissing, .stopping, .tooManyConditions, .sandboxesExhausted, .hostLookupFailed,
             .hostLookupTimedOut, .tooManyConnections, .tooManyCaptures:
            .serviceUnavailable
        }
    }
}
