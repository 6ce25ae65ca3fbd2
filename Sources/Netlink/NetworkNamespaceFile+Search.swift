import Glibc

extension NetworkNamespaceFile {
    /// A file that is the namespace `identity` now: a name in `namedDirectory`, or any process's
    /// `/proc/PID/ns/net`; `nil` once no name and no process keeps it alive.
    ///
    /// How a condition's objects are reached after the path it was made through stopped being
    /// its namespace (the PID it was named by exited while other processes of the container
    /// live, or `ip netns delete` while a process still runs inside).
    public static func path(of identity: NamespaceIdentity, namedDirectory: String = "/run/netns", processDirectory: String = "/proc") -> String? {
        let named = entries(of: namedDirectory).map { "\(namedDirectory)/\($0)" }
        let processes = entries(of: processDirectory)
            .filter { $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
            .map { "\(processDirectory)/\($0)/ns/net" }
        return (named + processes).first { Self.identity(at: $0) == identity }
    }

    /// The namespace `path` is, read without opening it (`stat` follows the nsfs link).
    static func identity(at path: String) -> NamespaceIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return NamespaceIdentity(status)
    }

    private static func entries(of directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
