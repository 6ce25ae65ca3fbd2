import ControlAPI
import Foundation
import NIOHTTP1
import Profiles
import Shaping

/// A request as the router sees it: no connection, no NIO types beyond the HTTP vocabulary.
struct ControlRequest: Sendable {
    var method: HTTPMethod
    /// The path without query string.
    var path: String
    var body: [UInt8]
}

/// A JSON reply with its status.
struct ControlReply: Sendable {
    var status: HTTPResponseStatus
    var body: [UInt8]
    /// For 405: the methods the path does allow.
    var allow: [HTTPMethod] = []
}

/// Maps requests to the conditioner and results to JSON, errors included.
struct ControlRouter: Sendable {
    let conditioner: Conditioner

    func respond(to request: ControlRequest) async -> ControlReply {
        var path = request.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        do {
            switch path {
            case APIPath.status:
                try require(request, .GET)
                return .json(await conditioner.status())
            case APIPath.profiles:
                try require(request, .GET)
                return .json(await conditioner.profiles())
            case APIPath.condition:
                try require(request, .PUT, .DELETE)
                if request.method == .DELETE {
                    return .json(try await conditioner.deactivate())
                }
                let activation = try decode(ActivateRequest.self, from: request.body)
                return .json(try await conditioner.activate(activation.profile, replacingForeign: activation.replaceForeign ?? false))
            case _ where path.hasPrefix(APIPath.profiles + "/"):
                try require(request, .GET)
                let encoded = path.dropFirst(APIPath.profiles.count + 1)
                guard let name = APIPath.percentDecode(encoded), !name.contains("/") else {
                    throw ControlError(.badRequest, code: "bad-request", message: "malformed profile name in the path")
                }
                return .json(try await conditioner.profile(named: name))
            default:
                throw ControlError(.notFound, code: "not-found", message: "no such endpoint: \(request.method) \(request.path); see docs/api.md")
            }
        } catch {
            return ControlError(error).reply
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

/// An error on its way to becoming a JSON reply.
struct ControlError: Error {
    var status: HTTPResponseStatus
    var document: ErrorResponse
    var allow: [HTTPMethod] = []

    init(_ status: HTTPResponseStatus, code: String, message: String, suggestions: [String]? = nil) {
        self.status = status
        self.document = ErrorResponse(code: code, message: message, suggestions: suggestions)
    }

    /// Maps domain errors to HTTP: unknown names are 404, a foreign qdisc a 409, kernel trouble a 5xx.
    init(_ error: Error) {
        switch error {
        case let error as ControlError:
            self = error
        case let error as UnknownProfileError:
            self.init(.notFound, code: "unknown-profile", message: error.description, suggestions: error.suggestions)
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
