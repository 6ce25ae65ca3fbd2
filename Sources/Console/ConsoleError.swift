import ControlAPI
import LinkCondClient
import NIOHTTP1

/// Why the console refused a request: a code of its own, or the daemon's, passed on with its
/// message. Answered as the control API answers errors: `{"error": {"code", "message"}}`.
struct ConsoleError: Error {
    enum Code: String {
        case badRequest = "bad-request"
        case notFound = "not-found"
        case methodNotAllowed = "method-not-allowed"
        case forbidden
        /// A change that did not come from the console's own page.
        case crossSite = "cross-site"
        case tooManyAttempts = "too-many-attempts"
        case daemonUnavailable = "daemon-unavailable"
    }

    var code: String
    var message: String
    var status: HTTPResponseStatus
    var problem: ProfileProblem?
    var allow: [HTTPMethod] = []
    var retryAfter: Int?

    init(_ code: Code, _ message: String) {
        self.code = code.rawValue
        self.message = message
        switch code {
        case .badRequest: status = .badRequest
        case .notFound: status = .notFound
        case .methodNotAllowed: status = .methodNotAllowed
        case .forbidden, .crossSite: status = .forbidden
        case .tooManyAttempts: status = .tooManyRequests
        case .daemonUnavailable: status = .serviceUnavailable
        }
    }

    /// The daemon's refusal as it gave it; the daemon out of reach as `daemon-unavailable`.
    init(_ error: ControlClientError) {
        if error.code == .api, let body = error.apiError, let status = error.status {
            self.init(.badRequest, body.message)
            code = body.code
            self.status = HTTPResponseStatus(statusCode: status)
            problem = body.problem
        } else {
            self.init(.daemonUnavailable, "the console cannot reach linkcondd: \(error.message)")
        }
    }

    var response: ConsoleResponse {
        var response = ConsoleApp.json(ErrorResponse(code: code, message: message, problem: problem), status: status)
        if !allow.isEmpty {
            response.headers.add(name: "Allow", value: allow.map(\.rawValue).joined(separator: ", "))
        }
        if let retryAfter {
            response.headers.add(name: "Retry-After", value: String(retryAfter))
        }
        return response
    }
}

extension ErrorResponse {
    /// An error document with a code the console has and the daemon may not.
    init(code: String, message: String, problem: ProfileProblem?) {
        self.init(code: .internal, message: message, problem: problem)
        error.code = code
    }
}
