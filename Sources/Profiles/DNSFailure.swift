/// Lookups that fail through a condition: the answer an app's resolver gets for the names it
/// asks (all of them, or those listed), while every other query is answered as before.
public struct DNSFailure: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// "No such name" (RCODE 3): `getaddrinfo` fails with EAI_NONAME at once.
        case nxdomain
        /// "Server failure" (RCODE 2): `getaddrinfo` fails with EAI_AGAIN at once.
        case servfail
        /// No answer at all: the resolver waits out its timeout and retries.
        case timeout
    }

    public var kind: Kind
    /// The names that fail, lowercased without a final dot; `*.example.com` stands for every
    /// name below example.com. Empty: every name.
    public var names: [String]

    public static let maximumNames = 64

    public init(kind: Kind, names: [String] = []) {
        self.kind = kind
        self.names = names
    }

    /// Reads a `dns: failure:` value.
    public static func kind(parsing text: String) throws(UnitParseError) -> Kind {
        guard let kind = Kind(rawValue: text.trimmingSpaces().lowercased()) else {
            let known = Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw UnitParseError("'\(text)' is not a DNS failure linkcond knows; write one of \(known)")
        }
        return kind
    }

    /// Reads one entry of `dns: names:`: a host name as a resolver is asked for it, or
    /// `*.` before one for every name below it.
    public static func name(parsing text: String) throws(UnitParseError) -> String {
        var name = text.trimmingSpaces().lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let body = name.hasPrefix("*.") ? String(name.dropFirst(2)) : name
        guard !body.isEmpty, body.utf8.count <= 253 else {
            throw UnitParseError("'\(text)' is not a host name (1 to 253 characters, e.g. api.example.com or *.example.com)")
        }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.utf8.count),
                  label.utf8.allSatisfy({ isNameByte($0) }) else {
                throw UnitParseError("'\(text)' is not a host name: each label is 1 to 63 letters, digits, '-' or '_' (e.g. api.example.com or *.example.com)")
            }
        }
        return name
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
    }

    /// Whether a query for `name` (lowercase, no final dot) fails.
    public func covers(_ name: String) -> Bool {
        guard !names.isEmpty else { return true }
        return names.contains { pattern in
            guard pattern.hasPrefix("*.") else { return pattern == name }
            return name.hasSuffix(pattern.dropFirst(1)) && name.utf8.count > pattern.utf8.count - 1
        }
    }

    /// `nxdomain`, `servfail for api.example.com, *.cdn.example.com`.
    public var description: String {
        names.isEmpty ? kind.rawValue : "\(kind.rawValue) for \(names.joined(separator: ", "))"
    }
}
