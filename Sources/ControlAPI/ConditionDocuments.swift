/// A profile given with the request instead of by name: a profile file's text, or what the
/// client built from `--rate`, `--delay` and the like. Validated exactly like a file.
public struct ProfileDefinition: Codable, Sendable, Equatable {
    /// The profile in YAML, as in a profile file.
    public var yaml: String
    /// Where it came from, for messages and history: the file's path, or `command line`.
    public var source: String

    public init(yaml: String, source: String) {
        self.yaml = yaml
        self.source = source
    }
}

/// `PUT /v1/condition`: switch the interface to a profile.
public struct ActivateRequest: Codable, Sendable, Equatable {
    /// Display name (`Slow Net`) or file stem (`slow-net`), ignoring case, spaces and
    /// punctuation. Either this or `definition`.
    public var profile: String?
    /// A profile that is not in the daemon's directories.
    public var definition: ProfileDefinition?
    /// Or a scenario (`GET /v1/scenarios`) by name: its steps' profiles follow one another.
    /// Exactly one of `profile`, `definition` and `scenario`.
    public var scenario: String?
    /// Delete a qdisc that linkcond did not create instead of refusing. It is not restored later.
    public var replaceForeign: Bool?
    /// Make it a lease that reverts by itself after this long, e.g. `30s` (see `LeaseDuration`).
    public var `for`: String?
    /// Override a lease held by another client.
    public var force: Bool?

    public init(
        profile: String? = nil, definition: ProfileDefinition? = nil, scenario: String? = nil, replaceForeign: Bool? = nil,
        for duration: String? = nil, force: Bool? = nil
    ) {
        self.profile = profile
        self.definition = definition
        self.scenario = scenario
        self.replaceForeign = replaceForeign
        self.for = duration
        self.force = force
    }
}

/// `GET /v1/status`, `GET /v1/conditions/{id}`, and the answer to every change: one condition.
public struct StatusResponse: Codable, Sendable, Equatable {
    /// The condition's id in `/v1/conditions/{id}`: the interface it shapes, preceded by its
    /// network namespace when that is not the daemon's (`netns/NAME/eth0`, `pid/PID/eth0`).
    public var id: String
    /// Whether this is the daemon's default condition, the one `/v1/condition` and commands
    /// without `--interface` change.
    public var isDefault: Bool
    public var interface: String
    /// `netns/NAME` or `pid/PID` when the interface is in another network namespace.
    public var namespace: String?
    /// For a condition on only the traffic exchanged with a peer: whom (`10.0.0.5:443`), as
    /// after `@` in the id. `nil`: the whole interface.
    public var peer: String?
    /// For a peer named by a host name: the addresses the condition matches, which the name
    /// resolved to when the condition was made.
    public var addresses: [String]?
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
    /// With `?verbose`: linkcond's qdiscs and classes as the kernel has them, with counters.
    public var kernel: [KernelObjectDocument]?
    /// For the condition of a `linkcond run --isolated` sandbox: how it is joined to the host.
    public var sandbox: SandboxDocument?
    /// While a scenario plays on the condition: which, its current step and what ends it.
    public var scenario: ScenarioStatusDocument?
    /// While a trace-driven profile is in force: where its traces are.
    public var trace: TracePlaybackDocument?

    public init(
        id: String? = nil, isDefault: Bool = true, interface: String, namespace: String? = nil, peer: String? = nil, ifb: String, active: Bool,
        profile: ProfileDocument?, since: String, exemptions: [String], lease: LeaseDocument? = nil
    ) {
        self.id = id ?? interface
        self.isDefault = isDefault
        self.interface = interface
        self.namespace = namespace
        self.peer = peer
        self.ifb = ifb
        self.active = active
        self.profile = profile
        self.since = since
        self.exemptions = exemptions
        self.lease = lease
    }
}

/// `GET /v1/conditions` and `DELETE /v1/conditions`: every condition the daemon holds, the
/// default one first (even when off), then the others by id. A condition other than the
/// default exists while it has a profile or a lease; switched off, it is gone.
public struct ConditionListResponse: Codable, Sendable, Equatable {
    public var conditions: [StatusResponse]

    public init(conditions: [StatusResponse]) {
        self.conditions = conditions
    }
}

/// One of linkcond's qdiscs or classes in the kernel, with its counters (`tc -s`).
public struct KernelObjectDocument: Codable, Sendable, Equatable {
    public var device: String
    /// `qdisc netem 7a10: parent 7a00:10`, `class 7a00:3 parent 7a00:1`.
    public var object: String
    public var packets: UInt64
    public var bytes: UInt64
    public var drops: UInt64
    public var overlimits: UInt64
    /// Waiting in the queue now.
    public var queuedPackets: UInt64
    public var queuedBytes: UInt64

    public init(device: String, object: String, packets: UInt64, bytes: UInt64, drops: UInt64, overlimits: UInt64, queuedPackets: UInt64, queuedBytes: UInt64) {
        self.device = device
        self.object = object
        self.packets = packets
        self.bytes = bytes
        self.drops = drops
        self.overlimits = overlimits
        self.queuedPackets = queuedPackets
        self.queuedBytes = queuedBytes
    }
}

/// How a sandbox (`linkcond run --isolated`) reaches the host: its own veth pair and /30, with
/// the host's end as its default gateway, and NAT behind the host's addresses.
public struct SandboxDocument: Codable, Sendable, Equatable {
    /// The sandbox's `eth0` address, `10.254.0.2`.
    public var address: String
    /// The host's end of the pair, the sandbox's default gateway.
    public var gateway: String
    /// The host's end as a device in the daemon's namespace (`lcsb0`).
    public var hostInterface: String
    /// What stands in the sandbox's way on this host, as found when it was made: a firewall
    /// chain that drops forwarded packets, with the commands that let sandboxes through.
    public var warnings: [String]?

    public init(address: String, gateway: String, hostInterface: String, warnings: [String]? = nil) {
        self.address = address
        self.gateway = gateway
        self.hostInterface = hostInterface
        self.warnings = warnings
    }
}

/// The answer to a reset: how many of the condition's TCP connections were reset, which ones it
/// took, and the condition (which a reset does not change).
public struct ResetResponse: Codable, Sendable, Equatable {
    /// Connections destroyed: each local socket failed with ECONNABORTED, its far end got a reset.
    public var reset: Int
    /// Connections listed that ended on their own before their turn.
    public var alreadyGone: Int
    /// Which connections the reset took: `TCP connections with 192.0.2.7:443`.
    public var connections: String
    public var condition: StatusResponse

    public init(reset: Int, alreadyGone: Int, connections: String, condition: StatusResponse) {
        self.reset = reset
        self.alreadyGone = alreadyGone
        self.connections = connections
        self.condition = condition
    }
}
