/// One direction of a profile, in the same human units as the profile files.
public struct DirectionDocument: Codable, Sendable, Equatable {
    /// `nil` when the direction is not rate-limited.
    public var bandwidth: String?
    public var delay: String
    public var jitter: String
    public var loss: String
    // The impairments of real links, each as in a profile file (`jitter-distribution:` is
    // `jitterDistribution` here); absent when the profile leaves them at their default.
    public var jitterDistribution: String?
    public var jitterCorrelation: String?
    public var keepOrder: Bool?
    public var lossCorrelation: String?
    public var burstLoss: BurstLossDocument?
    public var duplicate: String?
    public var duplicateCorrelation: String?
    public var corrupt: String?
    public var corruptCorrelation: String?
    public var reorder: String?
    public var reorderCorrelation: String?
    /// `100 packets`, `64000 B` or `50ms`.
    public var queue: String?
    /// A trace-driven direction's trace, which gives its rate instead of `bandwidth`.
    public var trace: TraceDocument?

    public init(bandwidth: String?, delay: String, jitter: String, loss: String) {
        self.bandwidth = bandwidth
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
    }
}

/// Losses in bursts: the average share lost, and the mean number lost in a row.
public struct BurstLossDocument: Codable, Sendable, Equatable {
    public var average: String
    public var length: Double

    public init(average: String, length: Double) {
        self.average = average
        self.length = length
    }
}

/// A profile in full: `GET /v1/profiles/{name}`, and the active one in the status.
public struct ProfileDocument: Codable, Sendable, Equatable {
    public var name: String
    public var description: String
    /// The YAML file it was loaded from.
    public var file: String
    public var downlink: DirectionDocument
    public var uplink: DirectionDocument
    public var dnsDelay: String
    /// `offline` or `refuse`: what happens to connections besides shaping; absent when nothing.
    public var failure: String?
    /// `nxdomain`, `servfail` or `timeout`: the lookups through the condition that fail; absent when none.
    public var dnsFailure: String?
    /// The names whose lookups fail; absent or empty: every name.
    public var dnsFailureNames: [String]?
    /// One line: `down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms`.
    public var summary: String
    /// In a listing or a profile's own document: true for a built-in profile, or one from a
    /// directory the daemon does not save in, which cannot be replaced or deleted through the
    /// API; absent for the rest. A condition's profile leaves it out.
    public var readOnly: Bool?

    public init(
        name: String, description: String, file: String, downlink: DirectionDocument, uplink: DirectionDocument, dnsDelay: String,
        failure: String? = nil, dnsFailure: String? = nil, dnsFailureNames: [String]? = nil, summary: String, readOnly: Bool? = nil
    ) {
        self.name = name
        self.description = description
        self.file = file
        self.downlink = downlink
        self.uplink = uplink
        self.dnsDelay = dnsDelay
        self.failure = failure
        self.dnsFailure = dnsFailure
        self.dnsFailureNames = dnsFailureNames
        self.summary = summary
        self.readOnly = readOnly
    }
}

/// A profile in a listing.
public struct ProfileSummary: Codable, Sendable, Equatable {
    public var name: String
    public var description: String
    public var file: String
    public var summary: String
    /// As `ProfileDocument.readOnly`.
    public var readOnly: Bool?

    public init(name: String, description: String, file: String, summary: String, readOnly: Bool? = nil) {
        self.name = name
        self.description = description
        self.file = file
        self.summary = summary
        self.readOnly = readOnly
    }
}

/// `POST /v1/profiles`: save a profile in the daemon's profile directory, as a YAML file like
/// any other (`linkcond profile save FILE`).
public struct SaveProfileRequest: Codable, Sendable, Equatable {
    /// The profile as a profile file has it; its `name` names it.
    public var definition: ProfileDefinition
    /// Replace a saved profile of the same name; without it, that is refused (`profile-exists`).
    public var replace: Bool?

    public init(definition: ProfileDefinition, replace: Bool? = nil) {
        self.definition = definition
        self.replace = replace
    }
}

/// A profile file that could not be loaded, located as `file:line`.
public struct ProfileProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var file: String
    public var line: Int
    public var field: String
    public var message: String

    public init(code: String, file: String, line: Int, field: String, message: String) {
        self.code = code
        self.file = file
        self.line = line
        self.field = field
        self.message = message
    }

    public var description: String {
        let location = line > 0 ? "\(file):\(line)" : file
        return field.isEmpty ? "\(location): \(message)" : "\(location): \(field): \(message)"
    }
}

/// `GET /v1/profiles`.
public struct ProfileListResponse: Codable, Sendable, Equatable {
    public var profiles: [ProfileSummary]
    /// Files that were skipped, so a typo in one file is visible and never hides the others.
    public var problems: [ProfileProblem]

    public init(profiles: [ProfileSummary], problems: [ProfileProblem]) {
        self.profiles = profiles
        self.problems = problems
    }
}
