import ControlAPI
import LinkCondClient
import LinkCondVocabulary
import Synchronization

/// A daemon in memory for the console's tests and its fuzzer: conditions on and off by id, a
/// fixed list of profiles, and every change recorded; a lease holder whose command has
/// arguments, for the masking.
package final class RecordingBackend: ConsoleBackend {
    package struct Change: Equatable, Sendable {
        package var condition: String
        package var profile: String?
    }

    private let state = Mutex<(conditions: [String: String?], changes: [Change])>(([:], []))
    package let holder = Holder(uid: 1000, user: "alice", pid: 42, command: "/usr/bin/pytest -k secret-token")

    package init(conditions: [String] = ["eth0"]) {
        state.withLock { state in
            for id in conditions { state.conditions[id] = .some(nil) }
        }
    }

    package var changes: [Change] { state.withLock { $0.changes } }

    package func conditions() async throws(ControlClientError) -> ConditionListResponse {
        ConditionListResponse(conditions: state.withLock { $0.conditions }.sorted { $0.key < $1.key }.map { id, profile in status(id, profile) })
    }

    package func stats() async throws(ControlClientError) -> StatsResponse {
        StatsResponse(at: "2026-11-30T00:00:00Z", conditions: [])
    }

    package func profiles() async throws(ControlClientError) -> ProfileListResponse {
        ProfileListResponse(profiles: [ProfileSummary(name: "Slow Net", description: "", file: "/built-in/slow-net.yaml", summary: "down: 32kbit", readOnly: true)], problems: [])
    }

    package func profile(named name: String) async throws(ControlClientError) -> ProfileDocument {
        guard name == "Slow Net" else { throw Self.refusal(404, "unknown-profile", "no profile named '\(name)'") }
        return Self.slowNet
    }

    package func history(limit: Int) async throws(ControlClientError) -> HistoryResponse {
        HistoryResponse(entries: [HistoryEntryDocument(time: "2026-11-30T00:00:00Z", condition: "eth0", from: "off", to: "Slow Net", reason: "activate", requester: holder, detail: nil)])
    }

    package func activate(_ profile: String, condition: String) async throws(ControlClientError) -> StatusResponse {
        guard profile == "Slow Net" else { throw Self.refusal(404, "unknown-profile", "no profile named '\(profile)'") }
        return state.withLock { state in
            state.conditions[condition] = .some(profile)
            state.changes.append(Change(condition: condition, profile: profile))
            return status(condition, profile)
        }
    }

    package func deactivate(condition: String) async throws(ControlClientError) -> StatusResponse {
        state.withLock { state in
            state.conditions[condition] = .some(nil)
            state.changes.append(Change(condition: condition, profile: nil))
            return status(condition, nil)
        }
    }

    package func saveProfile(_ definition: ProfileDefinition, replace: Bool) async throws(ControlClientError) -> ProfileDocument {
        guard definition.yaml.hasPrefix("name: ") else {
            throw ControlClientError(code: .api, message: "bad", status: 400, apiError: ErrorResponse.Body(
                code: "bad-profile", message: "\(definition.source):1: name: required",
                problem: ProfileProblem(code: "missing", file: definition.source, line: 1, field: "name", message: "required")))
        }
        state.withLock { $0.changes.append(Change(condition: "profiles", profile: definition.yaml)) }
        return Self.slowNet
    }

    package func deleteProfile(named name: String) async throws(ControlClientError) -> ProfileDocument {
        throw Self.refusal(409, "read-only-profile", "'\(name)' is read-only")
    }

    private func status(_ id: String, _ profile: String?) -> StatusResponse {
        var status = StatusResponse(
            id: id, interface: String(id.prefix { $0 != "@" }), ifb: "lc-x", active: profile != nil,
            profile: profile == nil ? nil : Self.slowNet, since: "2026-11-30T00:00:00Z", exemptions: []
        )
        if profile != nil {
            status.lease = LeaseDocument(profile: profile!, holder: holder, kind: .timed, expires: nil, secondsLeft: 30, restores: "off")
        }
        return status
    }

    static let slowNet = ProfileDocument(
        name: "Slow Net", description: "", file: "/built-in/slow-net.yaml",
        downlink: DirectionDocument(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
        uplink: DirectionDocument(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
        dnsDelay: "0ms", summary: "down: 32kbit", readOnly: true
    )

    static func refusal(_ status: Int, _ code: String, _ message: String) -> ControlClientError {
        ControlClientError(code: .api, message: message, status: status, apiError: ErrorResponse.Body(code: code, message: message))
    }
}
