import LinkCondVocabulary

/// The one error the `Conditioner`'s commands throw: why it refused or failed one, as the domain
/// error that says so. Only a `ConditionsError` becomes one, so that every failure a command can
/// have comes with a code, which the HTTP layer maps to a status (a total switch over
/// `ErrorCode`) and the CLI to advice.
public struct ConditionsRefusal: Error, CustomStringConvertible {
    public let reason: any ConditionsError

    public init(_ reason: some ConditionsError) {
        self.reason = reason
    }

    public var code: ErrorCode { reason.errorCode }
    public var suggestions: [String]? { reason.errorSuggestions }
    public var description: String { reason.description }
}

/// Runs a step that fails with a domain error of its own type, failing with it as a refusal.
@discardableResult
func refusing<Value, Failure: ConditionsError>(_ step: () throws(Failure) -> Value) throws(ConditionsRefusal) -> Value {
    do {
        return try step()
    } catch {
        throw ConditionsRefusal(error)
    }
}
