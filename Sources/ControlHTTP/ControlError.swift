import Conditions
import ControlAPI
import NIOHTTP1
import Profiles

/// A request the HTTP layer itself refuses: malformed, not allowed, or for nothing it serves.
/// The domain's refusals are `ConditionsError`s, answered by `ControlReply.refusal`.
package struct ControlError: Error {
    var errorCode: ErrorCode
    var errorMessage: String
    /// For 405: the methods the path does allow.
    var allowedMethods: [HTTPMethod] = []
    /// For `bad-profile`: where in the given profile the problem is.
    var errorProblem: ProfileProblem?

    init(_ code: ErrorCode, _ message: String) {
        self.errorCode = code
        self.errorMessage = message
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
        let document = ErrorResponse(code: errorCode, message: errorMessage, suggestions: nil, problem: errorProblem)
        var reply = ControlReply.json(document, status: errorCode.httpStatus)
        reply.allow = allowedMethods
        return reply
    }
}

extension ControlReply {
    /// The answer to a command the domain refused or failed.
    static func refusal(_ error: any ConditionsError) -> ControlReply {
        let document = ErrorResponse(code: error.errorCode, message: error.description, suggestions: error.errorSuggestions, problem: nil)
        return .json(document, status: error.errorCode.httpStatus)
    }
}
