import Conditions
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOPosix
import NIOHTTP1
import Profiles
import Shaping

/// A JSON reply with its status.
package struct ControlReply: Sendable {
    var status: HTTPResponseStatus
    var body: [UInt8]
    /// For 405: the methods the path does allow.
    var allow: [HTTPMethod] = []
    var contentType = "application/json"
}

/// What to do with a request: answer it, or hold a lease for as long as the connection lasts.
package enum Route: Sendable {
    case reply(ControlReply)
    /// A lease that lasts while the connection does.
    case hold(LeaseSession)
    /// A capture that streams while the connection lasts.
    case capture(CaptureStream)
}

/// Carries out parsed requests against the conditioner and turns results and errors into
/// JSON. Every change is authorized by the peer's credentials; reading is open to everyone.
package struct ControlRouter: Sendable {
    let conditioner: Conditioner
    let authorizer: Authorizer
    /// Set only when the daemon runs with `--enable-fault-injection`.
    var faults: FaultSwitch?
    var hostNames = HostNameResolver.system(timerLoop: MultiThreadedEventLoopGroup.singleton.any())
    var meter = TrafficMeter()
    /// Set for the metrics listener (`--metrics-listen`): `GET /metrics` is all it serves.
    package var metricsOnly = false
    var logger = Logger(label: "linkcondd")

    func route(_ request: ControlRequest) async -> Route {
        let call: APICall
        do throws(ControlError) {
            call = try APICall.parse(request, faultInjection: faults != nil)
            if metricsOnly, call != .metrics {
                throw ControlError(.notFound, "this address serves GET \(APIPath.metrics) alone; the rest of the API is on the control socket")
            }
            if call.changes {
                try authorize(request.requester, for: call)
            }
        } catch {
            return .reply(error.reply)
        }
        do throws(ConditionsRefusal) {
            return try await perform(call, for: request.requester)
        } catch {
            return .reply(ControlError(error).reply)
        }
    }

    /// For requests that cannot hold a lease.
    func respond(to request: ControlRequest) async -> ControlReply {
        switch await route(request) {
        case .reply(let reply): return reply
        case .hold: return ControlError.badRequest("leases need a streaming connection").reply
        case .capture: return ControlError.badRequest("captures need a streaming connection").reply
        }
    }

    private func perform(_ call: APICall, for requester: Requester) async throws(ConditionsRefusal) -> Route {
        switch call {
        case .status(let id, let verbose):
            return .reply(.json(shown(StatusResponse(try await conditioner.status(id, verbose: verbose)), to: requester)))
        case .conditions(let verbose):
            let list = await conditioner.conditionList(verbose: verbose)
            return .reply(.json(ConditionListResponse(conditions: list.map { shown(StatusResponse($0), to: requester) })))
        case .profiles:
            return .reply(.json(ProfileListResponse(await conditioner.profiles(), files: conditioner.profileFiles)))
        case .profile(let name):
            return .reply(.json(ProfileDocument(try await conditioner.profile(named: name), files: conditioner.profileFiles)))
        case .saveProfile(let profile, let yaml, let replace):
            let saved = try await conditioner.saveProfile(profile, yaml: yaml, replace: replace, by: requester)
            return .reply(.json(ProfileDocument(saved.entry, files: conditioner.profileFiles), status: saved.created ? .created : .ok))
        case .deleteProfile(let name):
            let deleted = try await conditioner.deleteProfile(named: name, by: requester)
            return .reply(.json(ProfileDocument(deleted, files: conditioner.profileFiles)))
        case .scenarios:
            return .reply(.json(ScenarioListResponse(await conditioner.scenarios())))
        case .next(let id):
            return .reply(.json(StatusResponse(try await conditioner.next(on: id, by: requester))))
        case .reset(let id, let force):
            return .reply(.json(ResetResponse(try await conditioner.reset(on: id, by: requester, force: force))))
        case .metrics:
            let readings = Dictionary(await conditioner.counterReadings().map { ($0.id, $0) }) { first, _ in first }
            let conditions = await conditioner.conditionList().map { snapshot in
                MetricsText.Condition(
                    id: snapshot.id.description, profile: snapshot.profile?.name, leaseSecondsLeft: snapshot.lease?.secondsLeft,
                    counters: readings[snapshot.id.description], failure: snapshot.profile?.failureName
                )
            }
            return .reply(ControlReply(status: .ok, body: Array(MetricsText.render(conditions).utf8), contentType: MetricsText.contentType))
        case .stats:
            let readings = await conditioner.counterReadings()
            let documents = meter.documents(readings, at: .now)
            return .reply(.json(StatsResponse(at: Date().formatted(.iso8601), conditions: documents)))
        case .history(let limit):
            var history = HistoryResponse(entries: await conditioner.history(limit: limit).map(HistoryEntryDocument.init))
            if !authorizer.mayChange(requester) {
                for index in history.entries.indices {
                    history.entries[index].requester = history.entries[index].requester?.withoutArguments
                }
            }
            return .reply(.json(history))
        case .activate(let id, let choice, let activation, let duration):
            return .reply(.json(StatusResponse(try await conditioner.activate(
                choice, on: id, by: requester, for: duration,
                force: activation.force ?? false, replacingForeign: activation.replaceForeign ?? false,
                hostAddresses: try await hostAddresses(for: id)
            ))))
        case .deactivate(let id, let force):
            return .reply(.json(StatusResponse(try await conditioner.deactivate(on: id, by: requester, force: force))))
        case .deactivateAll(let force):
            return .reply(.json(ConditionListResponse(try await conditioner.deactivateAll(by: requester, force: force))))
        case .hold(let id, let choice, let lease, let maximum):
            return .hold(LeaseSession(
                conditioner: conditioner, id: id, choice: choice, request: lease, maximum: maximum,
                hostAddresses: try await hostAddresses(for: id), requester: requester, logger: logger
            ))
        case .capture(let id, let options):
            return .capture(CaptureStream(conditioner: conditioner, id: id, options: options, requester: requester, logger: logger))
        case .releaseLease(let id):
            return .reply(.json(StatusResponse(try await conditioner.releaseLease(on: id, by: requester))))
        case .reload:
            return .reply(.json(ReloadResponse(await conditioner.reload(by: requester))))
        case .fault(let fault):
            faults?.arm(atStep: fault.failAtStep, fault: fault.fault ?? .fail)
            return .reply(.json(fault))
        case .faultCounter:
            return .reply(.json(["executedSteps": faults?.executedSteps ?? 0]))
        }
    }

    /// What the host name a new condition's peer is named by resolves to now; none when the id
    /// names no host, or the condition is held already (it keeps the addresses it was made with).
    private func hostAddresses(for id: ConditionID?) async throws(ConditionsRefusal) -> [[UInt8]] {
        guard let name = id?.peer?.hostName, await !conditioner.holds(id) else { return [] }
        do {
            return try await hostNames.addresses(of: name)
        } catch {
            throw ConditionsRefusal(error)
        }
    }

    /// A status as `requester` may see it: a lease holder's command line only for those who
    /// may change conditions themselves.
    private func shown(_ status: StatusResponse, to requester: Requester) -> StatusResponse {
        guard !authorizer.mayChange(requester), let holder = status.lease?.holder else { return status }
        var shown = status
        shown.lease?.holder = holder.withoutArguments
        return shown
    }

    private func authorize(_ requester: Requester, for call: APICall) throws(ControlError) {
        guard authorizer.mayChange(requester) else {
            if case .capture = call {
                throw ControlError(.forbidden, authorizer.refusal(for: requester, capturing: true))
            }
            throw ControlError(.forbidden, authorizer.refusal(for: requester))
        }
    }
}

/// `PUT /v1/debug/fault`: `{"failAtStep": 5}` fails the sixth netlink step from now,
/// `{"failAtStep": 5, "fault": "kill"}` makes the daemon SIGKILL itself there instead; `{}`
/// disarms (a null field is refused, as in every request). `GET` answers `{"executedSteps": N}`.
package struct FaultRequest: Codable, Sendable, Equatable {
    var failAtStep: Int?
    var fault: FaultSwitch.Fault?
}

extension ControlReply {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json<Value: Encodable>(_ value: Value, status: HTTPResponseStatus = .ok) -> ControlReply {
        // Encoding these plain documents cannot fail.
        var body = Array((try? encoder.encode(value)) ?? Data("{}".utf8))
        body.append(UInt8(ascii: "\n"))
        return ControlReply(status: status, body: body)
    }
}

extension ControlRouter {
    package init(conditioner: Conditioner, authorizer: Authorizer, faults: FaultSwitch?, hostNames: HostNameResolver) {
        self.conditioner = conditioner
        self.authorizer = authorizer
        self.faults = faults
        self.hostNames = hostNames
    }
}
