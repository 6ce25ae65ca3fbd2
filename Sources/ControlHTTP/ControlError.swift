import Conditions
import ControlAPI
import NIOHTTP1
import Profiles

/// A request the HTTP layer itself refuses: malformed, not allowed, or for nothing it serves.
/// The domain's refusals are `ConditionsRefusal`s, answered through `init(_:)`.
package struct ControlError: Error {
    var errorCode: ErrorCode
    var errorMessage: String
    /// Names that were probably meant, for `unknown-profile` and `unknown-scenario`.
    var errorSuggestions: [String]?
    /// For 405: the methods the path does allow.
    var allowedMethods: [HTTPMethod] = []
    /// For `bad-profile`: where in the given profile the problem is.
    var errorProblem: ProfileProblem?

    init(_ code: ErrorCode, _ message: String) {
        self.errorCode = code
        self.errorMessage = message
    }

    /// A command the domain refused or failed, answered as the HTTP layer's own refusals are.
    init(_ refusal: ConditionsRefusal) {
        self.init(refusal.code, refusal.description)
        errorSuggestions = refusal.suggestions
    }

    static func badRequest(_ message: String) -> ControlError {
        ControlError(.badRequest, message)
    }

    /// A profile given with the request that a profile file could not be either.
    static func badProfile(_ error: ProfileError) -> ControlError {
        var refusal = ControlError(.badProfile, error.description)
        refusal.errorProblem = ProfileProblem(error)
        return refusal
    }

    var reply: ControlReply {
        let document = ErrorResponse(code: errorCode, message: errorMessage, suggestions: errorSuggestions, problem: errorProblem)
        var reply = ControlReply.json(document, status: errorCode.httpStatus)
        reply.allow = allowedMethods
        return reply
    }
}
