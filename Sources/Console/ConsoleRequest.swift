import NIOHTTP1

/// One whole request from a browser, as the console's routes read it.
public struct ConsoleRequest: Sendable {
    public var method: HTTPMethod
    /// The path without its query, as sent (still percent-encoded).
    public var path: String
    public var query: [String: String]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The address the request came from, as the console sees it: what decides which device a
    /// request speaks for. `nil` on the token socket.
    public var peer: String?

    public init(method: HTTPMethod, uri: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], peer: String?) {
        self.method = method
        self.headers = headers
        self.body = body
        self.peer = peer
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = parts.first.map(String.init) ?? "/"
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[String(item[0])] = item.count > 1 ? String(item[1]) : ""
            }
        }
        self.query = query
    }

    /// A cookie's value, from the `Cookie` headers.
    public func cookie(_ name: String) -> String? {
        for header in headers[canonicalForm: "cookie"] {
            for pair in header.split(separator: ";") {
                let item = pair.split(separator: "=", maxSplits: 1)
                if item.count == 2, item[0].trimmingSpaces == name {
                    return item[1].trimmingSpaces
                }
            }
        }
        return nil
    }
}

/// What the console answers: a status, its headers and a body.
public struct ConsoleResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPResponseStatus, contentType: String, body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.body = body
        self.headers = headers
        self.headers.replaceOrAdd(name: "Content-Type", value: contentType)
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
