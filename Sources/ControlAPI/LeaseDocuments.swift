/// The name the client library's users knew `Holder` by.
@available(*, deprecated, renamed: "Holder")
public typealias HolderDocument = Holder

/// A condition that ends by itself: after a time, or when the client that asked for it goes away.
public struct LeaseDocument: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// Ends at `expires`.
        case timed
        /// Ends when the client's connection closes (`linkcond run`), or at `expires` if set.
        case clientBound = "client-bound"
    }

    public var profile: String
    public var holder: Holder
    public var kind: Kind
    /// ISO 8601, UTC; absent for a client-bound lease without a maximum.
    public var expires: String?
    /// Whole seconds until `expires`, when it is set.
    public var secondsLeft: Int?
    /// What comes back when the lease ends: a profile name, or `off`.
    public var restores: String

    public init(profile: String, holder: Holder, kind: Kind, expires: String?, secondsLeft: Int?, restores: String) {
        self.profile = profile
        self.holder = holder
        self.kind = kind
        self.expires = expires
        self.secondsLeft = secondsLeft
        self.restores = restores
    }
}

/// `POST /v1/leases`: hold a profile for as long as this connection stays open.
public struct LeaseRequest: Codable, Sendable, Equatable {
    /// A profile by name, or `definition`: as in `ActivateRequest`.
    public var profile: String?
    public var definition: ProfileDefinition?
    /// Or a scenario by name, played for as long as the lease lasts.
    public var scenario: String?
    /// The longest the lease may last even if the client stays, e.g. `30m`.
    public var `for`: String?
    /// Take over a lease held by someone else.
    public var force: Bool?
    public var replaceForeign: Bool?
    /// The interface whose condition the lease is on; absent: the daemon's default interface.
    public var interface: String?
    /// Or the condition's whole id, for one in another network namespace (`netns/NAME/eth0`,
    /// `pid/PID/eth0`); at most one of the two.
    public var condition: String?
    /// With `condition` `pid/PID/eth0`: that process's network namespace is a fresh one
    /// (`linkcond run --isolated` made it) for the daemon to join to the host first, with its
    /// own veth pair, addresses, route and NAT; all of it goes when the lease ends.
    public var sandbox: Bool?

    public init(
        profile: String? = nil, definition: ProfileDefinition? = nil, scenario: String? = nil, for duration: String? = nil,
        force: Bool? = nil, replaceForeign: Bool? = nil, interface: String? = nil, condition: String? = nil, sandbox: Bool? = nil
    ) {
        self.scenario = scenario
        self.interface = interface
        self.condition = condition
        self.sandbox = sandbox
        self.profile = profile
        self.definition = definition
        self.for = duration
        self.force = force
        self.replaceForeign = replaceForeign
    }
}

/// One line of the `POST /v1/leases` response stream (newline-delimited JSON).
public struct LeaseEvent: Codable, Sendable, Equatable {
    public enum Event: String, Codable, Sendable {
        /// The lease is in force; the first line.
        case active
        /// The lease is over and the previous condition is back; the last line.
        case ended
    }

    public enum EndReason: String, Codable, Sendable {
        /// The client closed its side of the connection.
        case released
        /// Its maximum duration passed.
        case expired
        /// Another client took over with `force`.
        case takenOver = "taken-over"
        /// The daemon is stopping.
        case shutdown
        /// The network namespace of the condition's interface is gone (its container stopped).
        case namespaceEnded = "namespace-ended"
    }

    public var event: Event
    public var reason: EndReason?
    /// Who took over, for `taken-over`.
    public var by: Holder?
    public var status: StatusResponse

    public init(event: Event, reason: EndReason? = nil, by: Holder? = nil, status: StatusResponse) {
        self.event = event
        self.reason = reason
        self.by = by
        self.status = status
    }
}
