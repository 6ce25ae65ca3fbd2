/// One change of condition, for `GET /v1/history`.
public struct HistoryEntryDocument: Codable, Sendable, Equatable {
    /// ISO 8601, UTC.
    public var time: String
    /// Profile name or `off`.
    public var from: String
    public var to: String
    /// `activate`, `off`, `lease`, `lease-expired`, `lease-released`, `client-lost`,
    /// `taken-over`, `reload`, `startup`, `shutdown`.
    public var reason: String
    /// Who asked; absent for the daemon's own changes (expiry, start-up, shutdown, SIGHUP reload).
    public var requester: Holder?
    /// Extra context, e.g. `lease 30s`.
    public var detail: String?
    /// The condition that changed (its id: the interface); absent in entries older than plural
    /// conditions, which were all on the daemon's default interface.
    public var condition: String?

    public init(time: String, condition: String? = nil, from: String, to: String, reason: String, requester: Holder?, detail: String?) {
        self.time = time
        self.condition = condition
        self.from = from
        self.to = to
        self.reason = reason
        self.requester = requester
        self.detail = detail
    }
}

/// `GET /v1/history`: the most recent changes, oldest first.
public struct HistoryResponse: Codable, Sendable, Equatable {
    public var entries: [HistoryEntryDocument]

    public init(entries: [HistoryEntryDocument]) {
        self.entries = entries
    }
}

/// `POST /v1/reload`: what re-reading the profile directories found.
public struct ReloadResponse: Codable, Sendable, Equatable {
    public var profiles: Int
    public var problems: [ProfileProblem]
    /// Whether the active condition's file changed and its new values were applied.
    public var reapplied: Bool
    public var status: StatusResponse

    public init(profiles: Int, problems: [ProfileProblem], reapplied: Bool, status: StatusResponse) {
        self.profiles = profiles
        self.problems = problems
        self.reapplied = reapplied
        self.status = status
    }
}
