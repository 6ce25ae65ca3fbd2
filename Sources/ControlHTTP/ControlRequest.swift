import Conditions
import ControlAPI
import NIOHTTP1

/// A request as the router sees it: no connection, no NIO types beyond the HTTP vocabulary.
///
/// Built from whatever bytes a local user sent: every part is parsed defensively and nothing
/// here can trap.
package struct ControlRequest: Sendable {
    /// More query parameters than this are refused: the API takes at most two.
    package static let maximumQueryParameters = 16

    package var method: HTTPMethod
    /// The path without query string or fragment, not percent-decoded.
    package var path: String
    /// Decoded query parameters; `nil` when the query string is malformed.
    package var query: [String: String]?
    package var body: [UInt8]
    package var requester: Requester

    package init(method: HTTPMethod, uri: String, body: [UInt8], requester: Requester) {
        self.method = method
        let withoutFragment = uri.prefix { $0 != "#" }
        let queryStart = withoutFragment.firstIndex(of: "?")
        self.path = String(withoutFragment[..<(queryStart ?? withoutFragment.endIndex)])
        self.query = Self.parseQuery(queryStart.map { withoutFragment[withoutFragment.index(after: $0)...] } ?? "")
        self.body = body
        self.requester = requester
    }

    /// `a=1&b&c=` into `["a": "1", "b": "", "c": ""]`; `nil` for a bad escape, an empty or
    /// repeated name, or too many parameters.
    package static func parseQuery(_ text: Substring) -> [String: String]? {
        var query: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            guard let name = PercentEncoding.decode(pair[..<(equals ?? pair.endIndex)], plusAsSpace: true), !name.isEmpty,
                  let value = PercentEncoding.decode(equals.map { pair[pair.index(after: $0)...] } ?? "", plusAsSpace: true),
                  query[name] == nil, query.count < maximumQueryParameters
            else { return nil }
            query[name] = value
        }
        return query
    }
}
