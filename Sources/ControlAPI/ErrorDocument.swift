/// Every error the API returns: `{"error": {"code": ..., "message": ...}}` with a matching HTTP status.
public struct ErrorResponse: Codable, Sendable, Equatable, Error {
    public struct Body: Codable, Sendable, Equatable {
        /// Stable and machine-readable: one of `ErrorCode`'s, kept as text so that a client reads
        /// the codes of a newer daemon too.
        public var code: String
        /// One line for people.
        public var message: String
        /// For `unknown-profile`: names that were probably meant.
        public var suggestions: [String]?
        /// For `bad-profile`: where in the given profile the problem is.
        public var problem: ProfileProblem?

        public init(code: String, message: String, suggestions: [String]? = nil, problem: ProfileProblem? = nil) {
            self.code = code
            self.message = message
            self.suggestions = suggestions
            self.problem = problem
        }
    }

    public var error: Body

    public init(code: ErrorCode, message: String, suggestions: [String]? = nil, problem: ProfileProblem? = nil) {
        self.error = Body(code: code.rawValue, message: message, suggestions: suggestions, problem: problem)
    }
}

extension ErrorResponse.Body {
    /// The code as one of this version's, or nil for one a newer daemon added.
    public var knownCode: ErrorCode? { ErrorCode(rawValue: code) }
}
