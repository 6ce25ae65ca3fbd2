import Conditions
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOHTTP1
import Profiles
import Sandboxes

/// A request understood: which endpoint, with its arguments checked. Parsing is pure, so that
/// every hostile byte sequence can be thrown at it without a daemon (see `Fuzz/`).
///
/// A `ConditionID` of `nil` is the default condition: `/v1/condition`, `/v1/status`, `/v1/lease`.
package enum APICall: Sendable, Equatable {
    case status(ConditionID?, verbose: Bool)
    case conditions(verbose: Bool)
    case profiles
    case profile(name: String)
    /// `POST /v1/profiles`: the profile parsed, the YAML it was parsed from, and whether it may
    /// replace a saved one of its name.
    case saveProfile(Profile, yaml: String, replace: Bool)
    case deleteProfile(name: String)
    case scenarios
    /// The condition's scenario moves on to its next step.
    case next(ConditionID?)
    /// The condition's TCP connections are reset now; refused while another client holds a
    /// lease on it, unless `force`.
    case reset(ConditionID?, force: Bool)
    /// The condition's packets as pcapng, streamed until a limit or the client's end.
    case capture(ConditionID?, CaptureOptions)
    case history(limit: Int)
    case stats
    /// The same counters, and the conditions, in Prometheus's text format.
    case metrics
    case activate(ConditionID?, ProfileChoice, ActivateRequest, duration: LeaseDuration?)
    case deactivate(ConditionID?, force: Bool)
    /// Every condition off: refused as a whole while another client holds a lease, unless `force`.
    case deactivateAll(force: Bool)
    /// Hold a lease for as long as the connection stays open.
    case hold(ConditionID?, ProfileChoice, LeaseRequest, maximum: LeaseDuration?)
    case releaseLease(ConditionID?)
    case reload
    case fault(FaultRequest)
    case faultCounter

    /// The largest `limit` of `GET /v1/history`: the daemon keeps no more.
    static let maximumHistoryLimit = ConditionHistory.kept

    /// Whether the call changes anything, and so needs the requester to be authorized.
    var changes: Bool {
        switch self {
        case .status, .conditions, .profiles, .profile, .scenarios, .history, .stats, .metrics, .faultCounter: return false
        default: return true
        }
    }

    /// Parses a request; `faultInjection` serves the test hook (a daemon started with
    /// `--enable-fault-injection`). Throws the 4xx the client gets.
    package static func parse(_ request: ControlRequest, faultInjection: Bool = false) throws(ControlError) -> APICall {
        guard let query = request.query else {
            throw .badRequest("malformed query string")
        }
        var path = request.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        switch path {
        case APIPath.status:
            try require(request, .GET)
            return .status(nil, verbose: try flag("verbose", in: query))
        case APIPath.conditions:
            try require(request, .GET, .DELETE)
            if request.method == .DELETE {
                return .deactivateAll(force: try flag("force", in: query))
            }
            return .conditions(verbose: try flag("verbose", in: query))
        case APIPath.profiles:
            try require(request, .GET, .POST)
            guard request.method == .POST else { return .profiles }
            let save = try decode(SaveProfileRequest.self, from: request.body)
            do {
                let profile = try ProfileParser.parse(yaml: save.definition.yaml, file: save.definition.source)
                return .saveProfile(profile, yaml: save.definition.yaml, replace: save.replace ?? false)
            } catch {
                throw .badProfile(error)
            }
        case APIPath.scenarios:
            try require(request, .GET)
            return .scenarios
        case APIPath.conditionNext:
            try require(request, .POST)
            return .next(nil)
        case APIPath.conditionReset:
            try require(request, .POST)
            return .reset(nil, force: try flag("force", in: query))
        case APIPath.conditionCapture:
            try require(request, .GET)
            return .capture(nil, try CaptureOptions(query: query))
        case APIPath.stats:
            try require(request, .GET)
            return .stats
        case APIPath.metrics:
            try require(request, .GET)
            return .metrics
        case APIPath.history:
            try require(request, .GET)
            guard let text = query["limit"] else { return .history(limit: 20) }
            guard let limit = Int(text), (0...maximumHistoryLimit).contains(limit) else {
                throw .badRequest("limit must be a whole number from 0 to \(maximumHistoryLimit)")
            }
            return .history(limit: limit)
        case APIPath.condition:
            return try condition(nil, request, query: query)
        case APIPath.leases:
            try require(request, .POST)
            let lease = try decode(LeaseRequest.self, from: request.body)
            let maximum = try leaseDuration(lease.for)
            if lease.interface != nil && lease.condition != nil {
                throw .badRequest("give the interface or the condition, not both")
            }
            let id = try (lease.condition ?? lease.interface).map { name throws(ControlError) in try conditionID(name) }
            if lease.sandbox == true {
                guard let id, case .process = id.namespace, id.interface == SandboxAddressing.sandboxInterface, id.peer == nil else {
                    throw .badRequest("a sandbox is asked for with the condition pid/PID/\(SandboxAddressing.sandboxInterface), PID a process in the fresh network namespace to join to the host")
                }
            }
            return .hold(id, try ProfileChoice.from(profile: lease.profile, definition: lease.definition, scenario: lease.scenario), lease, maximum: maximum)
        case APIPath.lease:
            try require(request, .DELETE)
            return .releaseLease(nil)
        case APIPath.reload:
            try require(request, .POST)
            return .reload
        case APIPath.faultInjection where faultInjection:
            try require(request, .PUT, .GET)
            if request.method == .GET { return .faultCounter }
            return .fault(request.body.isEmpty ? FaultRequest(failAtStep: nil) : try decode(FaultRequest.self, from: request.body))
        case _ where path.hasPrefix(APIPath.conditions + "/"):
            var rest = path.dropFirst(APIPath.conditions.count + 1)
            let leaseSuffix = "/lease", nextSuffix = "/next", resetSuffix = "/reset", captureSuffix = "/capture"
            let isLease = rest.hasSuffix(leaseSuffix), isNext = rest.hasSuffix(nextSuffix), isReset = rest.hasSuffix(resetSuffix)
            let isCapture = rest.hasSuffix(captureSuffix)
            if isLease { rest = rest.dropLast(leaseSuffix.count) }
            if isNext { rest = rest.dropLast(nextSuffix.count) }
            if isReset { rest = rest.dropLast(resetSuffix.count) }
            if isCapture { rest = rest.dropLast(captureSuffix.count) }
            guard let name = PercentEncoding.decode(rest) else {
                throw .badRequest("malformed condition id in the path")
            }
            let id = try conditionID(name)
            if isNext {
                try require(request, .POST)
                return .next(id)
            }
            if isReset {
                try require(request, .POST)
                return .reset(id, force: try flag("force", in: query))
            }
            if isCapture {
                try require(request, .GET)
                return .capture(id, try CaptureOptions(query: query))
            }
            guard isLease else { return try condition(id, request, query: query) }
            try require(request, .DELETE)
            return .releaseLease(id)
        case _ where path.hasPrefix(APIPath.profiles + "/"):
            try require(request, .GET, .DELETE)
            let encoded = path.dropFirst(APIPath.profiles.count + 1)
            guard let name = PercentEncoding.decode(encoded), !name.isEmpty, !name.contains("/"), name.utf8.count <= 256 else {
                throw .badRequest("malformed profile name in the path")
            }
            return request.method == .DELETE ? .deleteProfile(name: name) : .profile(name: name)
        default:
            throw ControlError(.notFound, "no such endpoint: \(request.method) \(printable(request.path)); see docs/api.md")
        }
    }

    /// `GET`, `PUT` or `DELETE` of one condition: the default one, or `id`.
    private static func condition(_ id: ConditionID?, _ request: ControlRequest, query: [String: String]) throws(ControlError) -> APICall {
        // GET of the default condition stays /v1/status, as it always was.
        if id == nil { try require(request, .PUT, .DELETE) } else { try require(request, .GET, .PUT, .DELETE) }
        switch request.method {
        case .GET:
            return .status(id, verbose: try flag("verbose", in: query))
        case .DELETE:
            return .deactivate(id, force: try flag("force", in: query))
        default:
            let activation = try decode(ActivateRequest.self, from: request.body)
            let duration = try leaseDuration(activation.for)
            let choice = try ProfileChoice.from(profile: activation.profile, definition: activation.definition, scenario: activation.scenario)
            return .activate(id, choice, activation, duration: duration)
        }
    }

    /// A condition id from a path or a request: an interface's name, or `netns/NAME/IF`,
    /// `pid/PID/IF` for an interface in another network namespace.
    private static func conditionID(_ name: String) throws(ControlError) -> ConditionID {
        do {
            return try ConditionID(parsing: name)
        } catch {
            throw .badRequest("no condition '\(printable(name))': \(error)")
        }
    }

    private static func require(_ request: ControlRequest, _ methods: HTTPMethod...) throws(ControlError) {
        guard methods.contains(request.method) else {
            var error = ControlError(
                .methodNotAllowed, "\(printable(request.path)) accepts \(methods.map(\.rawValue).joined(separator: ", ")), not \(request.method)"
            )
            error.allowedMethods = methods
            throw error
        }
    }

    /// `?force`, `?force=1`, `?force=true`; anything else for a flag is a mistake worth saying.
    private static func flag(_ name: String, in query: [String: String]) throws(ControlError) -> Bool {
        guard let value = query[name] else { return false }
        switch value.lowercased() {
        case "", "1", "true": return true
        case "0", "false": return false
        default: throw .badRequest("\(name) must be true or false, not '\(printable(value))'")
        }
    }

    private static func leaseDuration(_ text: String?) throws(ControlError) -> LeaseDuration? {
        do {
            return try LeaseDuration.parse(text)
        } catch {
            throw .badRequest("lease duration \(error)")
        }
    }

    /// Decodes a JSON object, refusing fields it does not know: a misspelt `"forse": true`
    /// must not pass unnoticed.
    package static func decode<Value: Decodable & KnownFields>(_ type: Value.Type, from body: [UInt8]) throws(ControlError) -> Value {
        guard !body.isEmpty else {
            throw .badRequest("the request needs a JSON body, e.g. {\"profile\": \"Slow Net\"}")
        }
        let data = Data(body)
        let decoder = JSONDecoder()
        guard (try? decoder.decode(FieldNames.self, from: data)) != nil else {
            throw .badRequest("the request body is not valid JSON")
        }
        guard let fields = try? decoder.decode([String: FieldNames].self, from: data) else {
            throw .badRequest("the request body must be a JSON object, e.g. {\"profile\": \"Slow Net\"}")
        }
        for field in fields.keys.sorted() where !Value.knownFields.contains(field) {
            throw .badRequest("unknown field '\(printable(field))' in the JSON body; known fields: \(Value.knownFields.joined(separator: ", "))")
        }
        // Every field is optional, and absent is the one way to say so: a null would pass as
        // absent, where the sender may have meant something else.
        for (field, value) in fields.sorted(by: { $0.key < $1.key }) where value.isNull {
            throw .badRequest("the JSON field '\(field)' is null; leave it out instead")
        }
        for (field, known) in Value.knownNestedFields.sorted(by: { $0.key < $1.key }) {
            for name in fields[field]?.names?.sorted() ?? [] where !known.contains(name) {
                throw .badRequest("unknown field '\(printable(field)).\(printable(name))' in the JSON body; '\(field)' has \(known.joined(separator: ", "))")
            }
        }
        do {
            return try decoder.decode(type, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw .badRequest("the JSON body lacks the field '\(key.stringValue)'")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .badRequest("the JSON field '\(printable(field))' has the wrong type")
        } catch {
            throw .badRequest("the request body is not valid JSON")
        }
    }

    /// Text from the request, safe to put in a message or a log line: control characters
    /// escaped, and cut to a readable length.
    package static func printable(_ text: String, limit: Int = 120) -> String {
        printableText(text, limit: limit)
    }
}

/// Field names a request document accepts.
package protocol KnownFields {
    static var knownFields: [String] { get }
    /// For fields that are objects themselves: the names each accepts.
    static var knownNestedFields: [String: [String]] { get }
}

extension KnownFields {
    package static var knownNestedFields: [String: [String]] { [:] }
}

extension ActivateRequest: KnownFields {
    package static var knownFields: [String] { ["profile", "definition", "scenario", "for", "force", "replaceForeign"] }
    package static var knownNestedFields: [String: [String]] { ["definition": ProfileDefinition.knownFields] }
}

extension LeaseRequest: KnownFields {
    package static var knownFields: [String] { ["profile", "definition", "scenario", "for", "force", "replaceForeign", "interface", "condition", "sandbox"] }
    package static var knownNestedFields: [String: [String]] { ["definition": ProfileDefinition.knownFields] }
}

extension ProfileDefinition {
    static var knownFields: [String] { ["yaml", "source"] }
}

extension SaveProfileRequest: KnownFields {
    package static var knownFields: [String] { ["definition", "replace"] }
    package static var knownNestedFields: [String: [String]] { ["definition": ProfileDefinition.knownFields] }
}

extension FaultRequest: KnownFields {
    package static var knownFields: [String] { ["failAtStep", "fault"] }
}

/// Any JSON value, decoded only to learn its field names when it is an object, and whether it
/// is null.
private struct FieldNames: Decodable {
    var names: [String]?
    var isNull = false

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        names = (try? decoder.container(keyedBy: Key.self))?.allKeys.map(\.stringValue)
        isNull = (try? decoder.singleValueContainer().decodeNil()) ?? false
    }
}
