/// Every code an error response can carry: the API's whole vocabulary of refusals, stable and
/// machine-readable. docs/api.md's table says when each is answered and with which status.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    // The request itself.
    case badRequest = "bad-request"
    case badProfile = "bad-profile"
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case requestTimeout = "request-timeout"
    case payloadTooLarge = "payload-too-large"
    case tooManyConnections = "too-many-connections"
    case forbidden
    // What it names.
    case unknownProfile = "unknown-profile"
    /// A built-in profile, or one from a directory the daemon does not save in.
    case readOnlyProfile = "read-only-profile"
    /// Saving would replace a profile of the same name, and replacing was not asked for.
    case profileExists = "profile-exists"
    /// The profile file could not be written or removed (or there is no directory to save in).
    case profileNotSaved = "profile-not-saved"
    case unknownScenario = "unknown-scenario"
    case unknownInterface = "unknown-interface"
    case unknownNamespace = "unknown-namespace"
    case loopback
    case unknownHost = "unknown-host"
    case hostLookupFailed = "host-lookup-failed"
    case hostLookupTimedOut = "host-lookup-timed-out"
    case tooManyAddresses = "too-many-addresses"
    case loopbackHost = "loopback-host"
    // The conditions already held.
    case leaseHeld = "lease-held"
    case noLease = "no-lease"
    case aliasedCondition = "aliased-condition"
    case overlappingPeer = "overlapping-peer"
    case tooManyConditions = "too-many-conditions"
    case noScenario = "no-scenario"
    case scenarioOver = "scenario-over"
    case scenarioStep = "scenario-step"
    // Sandboxes.
    case sandboxRequest = "sandbox-request"
    case sandboxNotYours = "sandbox-not-yours"
    case sandboxNamespaceInUse = "sandbox-namespace-in-use"
    case sandboxPlumbingFailed = "sandbox-plumbing-failed"
    case sandboxNATFailed = "sandbox-nat-failed"
    case sandboxesExhausted = "sandboxes-exhausted"
    // The kernel and the machine.
    case foreignQdisc = "foreign-qdisc"
    case ifbNameTaken = "ifb-name-taken"
    case interfaceMissing = "interface-missing"
    case namespaceGone = "namespace-gone"
    case missingKernelModule = "missing-kernel-module"
    case notPermitted = "not-permitted"
    case kernelRefused = "kernel-refused"
    case namespacesUnavailable = "namespaces-unavailable"
    case sandboxesUnavailable = "sandboxes-unavailable"
    case resetUnavailable = "reset-unavailable"
    case tooManyCaptures = "too-many-captures"
    // The daemon.
    case stopping
    case `internal`
}
