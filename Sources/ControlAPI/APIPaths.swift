/// The control API's routes. Versioned, so a future `/v2` can change shapes without breaking scripts.
public enum APIPath {
    public static let profiles = "/v1/profiles"
    public static let scenarios = "/v1/scenarios"
    /// `POST`: the default condition's scenario moves on to its next step.
    public static let conditionNext = "/v1/condition/next"
    /// `POST`: the default condition's TCP connections are reset now.
    public static let conditionReset = "/v1/condition/reset"
    /// `GET`: the default condition's packets, streamed as pcapng.
    public static let conditionCapture = "/v1/condition/capture"
    public static let status = "/v1/status"
    /// The default condition: the daemon's own interface.
    public static let condition = "/v1/condition"
    /// Every condition: `GET` lists them, `DELETE` switches them all off.
    public static let conditions = "/v1/conditions"
    public static let leases = "/v1/leases"
    /// The current lease: `DELETE` ends it early when the caller holds it.
    public static let lease = "/v1/lease"
    public static let reload = "/v1/reload"
    public static let history = "/v1/history"
    /// Every condition's counters, read from the kernel.
    public static let stats = "/v1/stats"
    /// The conditions and their counters for Prometheus: outside `/v1`, where scrapers look.
    public static let metrics = "/metrics"
    /// Test hook, served only by a daemon started with `--enable-fault-injection`.
    public static let faultInjection = "/v1/debug/fault"

    /// `/v1/profiles/{name}` with the name percent-encoded, so `Slow Net` and `100% Loss` survive.
    public static func profile(_ name: String) -> String {
        profiles + "/" + PercentEncoding.encode(name)
    }

    /// `/v1/conditions/{id}`: one condition (`GET`, `PUT`, `DELETE`); the id is the interface's name.
    public static func condition(_ id: String) -> String {
        conditions + "/" + PercentEncoding.encode(id)
    }

    /// `/v1/conditions/{id}/lease`: `DELETE` ends the caller's lease on that condition early.
    public static func conditionLease(_ id: String) -> String {
        condition(id) + "/lease"
    }

    /// `/v1/conditions/{id}/next`: `POST` moves that condition's scenario on to its next step.
    public static func conditionNext(_ id: String) -> String {
        condition(id) + "/next"
    }

    /// `/v1/conditions/{id}/reset`: `POST` resets that condition's TCP connections now.
    public static func conditionReset(_ id: String) -> String {
        condition(id) + "/reset"
    }

    /// `/v1/conditions/{id}/capture`: `GET` streams that condition's packets as pcapng.
    public static func conditionCapture(_ id: String) -> String {
        condition(id) + "/capture"
    }
}
