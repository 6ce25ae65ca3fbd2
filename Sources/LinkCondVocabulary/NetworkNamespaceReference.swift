/// A network namespace other than the daemon's own, as a user names it: one `ip netns` made
/// (a file in `/run/netns`), or the one a process is in (a container's, by its PID).
public enum NetworkNamespaceReference: Hashable, Sendable, Comparable, CustomStringConvertible {
    case named(String)
    case process(Int32)

    /// Where `ip netns` keeps its namespaces.
    public static let namedDirectory = "/run/netns"
    /// Linux's largest PID (`PID_MAX_LIMIT` on 64-bit).
    public static let maximumPID: Int32 = 4_194_304

    /// The file that is the namespace: opening it is how the daemon enters it.
    public var path: String {
        switch self {
        case .named(let name): return "\(Self.namedDirectory)/\(name)"
        case .process(let pid): return "/proc/\(pid)/ns/net"
        }
    }

    /// `netns/NAME` or `pid/PID`: the first part of a condition id.
    public var description: String {
        switch self {
        case .named(let name): return "netns/\(name)"
        case .process(let pid): return "pid/\(pid)"
        }
    }

    /// Why `name` cannot name a namespace in `/run/netns`, or `nil` when it can.
    public static func problem(name: String) -> String? {
        if name.isEmpty { return "a namespace name cannot be empty" }
        if name.utf8.count > 255 { return "a namespace name has at most 255 bytes" }
        if name == "." || name == ".." { return "'\(name)' cannot be a namespace name" }
        for byte in name.utf8 where byte == UInt8(ascii: "/") || byte <= 0x20 || byte == 0x7F {
            return "a namespace name has no '/', spaces or control characters"
        }
        return nil
    }

    /// A PID as text, or why it is not one.
    public static func pid(parsing text: Substring) -> Result<Int32, NamespaceReferenceError> {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              text.utf8.count <= 7, let pid = Int32(text), (1...maximumPID).contains(pid)
        else {
            return .failure(NamespaceReferenceError(message: "'\(text)' is not a process id (1 to \(maximumPID))"))
        }
        return .success(pid)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.description < rhs.description
    }
}

/// A condition id or namespace that cannot be one.
public struct NamespaceReferenceError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
