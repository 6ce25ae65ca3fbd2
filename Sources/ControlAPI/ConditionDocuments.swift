/// `PUT /v1/condition`: switch the interface to a profile.
public struct ActivateRequest: Codable, Sendable, Equatable {
    /// Display name (`Slow Net`) or file stem (`slow-net`), case-insensitive.
    public var profile: String
    /// Delete a qdisc that linkcond did not create instead of refusing. It is not restored later.
    public var replaceForeign: Bool?
    /// Make it a lease that reverts by itself after this long, e.g. `30s` (see `LeaseDuration`).
    public var `for`: String?
    /// Override a lease held by another client.
    public var force: Bool?

    public init(profile: String, replaceForeign: Bool? = nil, for duration: String? = nil, force: Bool? = nil) {
        self.profile = profile
        self.replaceForeign = replaceForeign
        self.for = duration
        self.force = force
    }
}

/// `GET /v1/status`, and the answer to every change.
public struct StatusResponse: Codable, Sendable, Equatable {
    public var interface: String
    /// The IFB device that carries the downlink while shaping is on.
    public var ifb: String
    public var active: Bool
    /// The profile in force, `nil` when off.
    public var profile: ProfileDocument?
    /// When the current condition (or "off") began, ISO 8601 in UTC.
    public var since: String
    /// Traffic that is never shaped, e.g. `tcp/22`.
    public var exemptions: [String]
    /// Set while the condition is a lease: who holds it, until when, what comes back after.
    public var lease: LeaseDocument?

    public init(interface: String, ifb: String, active: Bool, profile: ProfileDocument?, since: String, exemptions: [String], lease: LeaseDocument? = nil) {
        self.interface = interface
        self.ifb = ifb
        self.active = active
        self.profile = profile
        self.since = since
        self.exemptions = exemptions
        self.lease = lease
    }
}
