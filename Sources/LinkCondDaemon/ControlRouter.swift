import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOHTTP1
import Profiles
import Shaping

/// A request as the router sees it: no connection, no NIO types beyond the HTTP vocabulary.
struct ControlRequest: Sendable {
    var method: HTTPMethod
    /// The path without query string.
    var path: String
    var query: [String: String] = [:]
    var body: [UInt8]
    var requester: Requester

    init(method: HTTPMethod, uri: String, body: [UInt8], requester: Requester) {
        self.method = method
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.path = String(parts[0].prefix { $0 != "#" })
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1)
                guard let key = APIPath.percentDecode(keyValue[0]) else { continue }
                query[key] = keyValue.count == 2 ? APIPath.percentDecode(keyValue[1]) ?? "" : ""
            }
        }
        self.body = body
        self.requester = requester
    }
}

/// A JSON reply with its status.
struct ControlReply: Sendable {
    var status: HTTPResponseStatus
    var body: [UInt8]
    /// For 405: the methods the path does allow.
    var allow: [HTTPMethod] = []
}

/// What to do with a request: answer it, or hold a lease for as long as the connection lasts.
enum Route: Sendable {
    case reply(ControlReply)
    case hold(LeaseRequest, maximum: LeaseDuration?)
}

/// Maps requests to the conditioner and results to JSON, errors included. Every change is
/// authorized by the peer's credentials; reading is open to everyone.
struct ControlRouter: Sendable {
    let conditioner: Conditioner
    let authorizer: Authorizer
    /// Set only when the daemon runs with `--enable-fault-injection`.
    var faults: FaultSwitch?

    func route(_ request: ControlRequest) async -> Route {
        do {
            return try await dispatch(request)
        } catch {
            return .reply(ControlError(error).reply)
        }
    }

    /// For requests that cannot hold a lease.
    func respond(to request: ControlRequest) async -> ControlReply {
        switch await route(request) {
        case .reply(let reply): return reply
        case .hold: return ControlError(.badRequest, code: "bad-request", message: "leases need a streaming connection").reply
        }
    }

    private func dispatch(_ request: ControlRequest) async throws -> Route {
        var path = request.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        switch path {
        case APIPath.status:
            try require(request, .GET)
            return .reply(.json(await conditioner.status()))
        case APIPath.profiles:
            try require(request, .GET)
            return .reply(.json(await conditioner.profiles()))
        case APIPath.history:
            try require(request, .GET)
            let limit = request.query["limit"].flatMap(Int.init) ?? 20
            return .reply(.json(await conditioner.history(limit: limit)))
        case APIPath.condition:
            try require(request, .PUT, .DELETE)
            try authorize(request)
            if request.method == .DELETE {
                return .reply(.json(try await conditioner.deactivate(by: request.requester, force: request.flag("force"))))
            }
            let activation = try decode(ActivateRequest.self, from: request.body)
            let duration = try LeaseDuration.parse(activation.for)
            return .reply(.json(try await conditioner.activate(
                activation.profile, by: request.requester, for: duration,
                force: activation.force ?? false, replacingForeign: activation.replaceForeign ?? false
            )))
        case APIPath.leases:
            try require(request, .POST)
            try authorize(request)
            let lease = try decode(LeaseRequest.self, from: request.body)
            let maximum = try LeaseDuration.parse(lease.for)
            return .hold(lease, maximum: maximum)
        case APIPath.reload:
            try require(request, .POST)
            try authorize(request)
            return .reply(.json(await conditioner.reload(by: request.requester)))
        case APIPath.faultInjection where faults != nil:
            try require(request, .PUT)
            try authorize(request)
            let fault = request.body.isEmpty ? FaultRequest(failAtStep: nil) : try decode(FaultRequest.self, from: request.body)
            faults?.arm(atStep: fault.failAtStep, fault: fault.fault ?? .fail)
            return .reply(.json(fault))
        case _ where path.hasPrefix(APIPath.profiles + "/"):
            try require(request, .GET)
            let encoded = path.dropFirst(APIPath.profiles.count + 1)
            guard let name = APIPath.percentDecode(encoded), !name.contains("/") else {
                throw ControlError(.badRequest, code: "bad-request", message: "malformed profile name in the path")
            }
            return .reply(.json(try await conditioner.profile(named: name)))
        default:
            throw ControlError(.notFound, code: "not-found", message: "no such endpoint: \(request.method) \(request.path); see docs/api.md")
        }
    }

    private func authorize(_ request: ControlRequest) throws(ControlError) {
        guard authorizer.mayChange(request.requester) else {
            throw ControlError(.forbidden, code: "forbidden", message: authorizer.refusal(for: request.requester))
        }
    }

    private func require(_ request: ControlRequest, _ methods: HTTPMethod...) throws(ControlError) {
        guard methods.contains(request.method) else {
            var error = ControlError(
                .methodNotAllowed, code: "method-not-allowed",
                message: "\(request.path) accepts \(methods.map(\.rawValue).joined(separator: ", ")), not \(request.method)"
            )
            error.allow = methods
            throw error
        }
    }

    private func decode<Value: Decodable>(_ type: Value.Type, from body: [UInt8]) throws(ControlError) -> Value {
        guard !body.isEmpty else {
            throw ControlError(.badRequest, code: "bad-request", message: "the request needs a JSON body, e.g. {\"profile\": \"Slow Net\"}")
        }
        do {
            return try JSONDecoder().decode(type, from: Data(body))
        } catch let DecodingError.keyNotFound(key, _) {
            throw ControlError(.badRequest, code: "bad-request", message: "the JSON body lacks the field '\(key.stringValue)'")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw ControlError(.badRequest, code: "bad-request", message: "the JSON field '\(field)' has the wrong type")
        } catch {
            throw ControlError(.badRequest, code: "bad-request", message: "the request body is not valid JSON")
        }
    }
}

/// `PUT /v1/debug/fault`: `{"failAtStep": 5}` fails the sixth netlink step from now,
/// `{"failAtStep": 5, "fault": "kill"}` makes the daemon SIGKILL itself there instead;
/// `{"failAtStep": null}` disarms.
struct FaultRequest: Codable, Sendable {
    var failAtStep: Int?
    var fault: FaultSwitch.Fault?
}

extension ControlRequest {
    /// `?force`, `?force=1`, `?force=true`.
    func flag(_ name: String) -> Bool {
        guard let value = query[name] else { return false }
        return value.isEmpty || value == "1" || value.lowercased() == "true"
    }
}

/// An error on its way to becoming a JSON reply.
struct ControlError: Error {
    var status: HTTPResponseStatus
    var document: ErrorResponse
    var allow: [HTTPMethod] = []

    init(_ status: HTTPResponseStatus, code: String, message: String, suggestions: [String]? = nil) {
        self.status = status
        self.document = ErrorResponse(code: code, message: message, suggestions: suggestions)
    }

    /// Maps domain errors to HTTP: unknown names are 404, conflicts 409, kernel trouble a 5xx.
    init(_ error: Error) {
        switch error {
        case let error as ControlError:
            self = error
        case let error as UnknownProfileError:
            self.init(.notFound, code: "unknown-profile", message: error.description, suggestions: error.suggestions)
        case let error as LeaseConflictError:
            self.init(.conflict, code: "lease-held", message: error.description)
        case let error as LeaseDurationError:
            self.init(.badRequest, code: "bad-request", message: "lease duration \(error)")
        case let error as ShapingError:
            self.init(Self.status(for: error.code), code: error.code.rawValue, message: error.description)
        default:
            self.init(.internalServerError, code: "internal", message: "\(error)")
        }
    }

    static func status(for code: ShapingError.Code) -> HTTPResponseStatus {
        switch code {
        case .foreignQdisc, .ifbNameTaken: return .conflict
        case .interfaceMissing: return .serviceUnavailable
        default: return .internalServerError
        }
    }

    var reply: ControlReply {
        var reply = ControlReply.json(document, status: status)
        reply.allow = allow
        return reply
    }
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
