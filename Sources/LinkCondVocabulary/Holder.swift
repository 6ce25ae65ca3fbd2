/// Who made a request, as the daemon learned it from the socket's peer credentials: a lease's
/// holder, in answers and in the state file.
public struct Holder: Codable, Sendable, Equatable, CustomStringConvertible {
    public var uid: UInt32
    /// The user name, when the uid has one.
    public var user: String?
    public var pid: Int32
    /// The peer's command line, when it could be read.
    public var command: String?

    public init(uid: UInt32, user: String?, pid: Int32, command: String?) {
        self.uid = uid
        self.user = user
        self.pid = pid
        self.command = command
    }

    /// As shown to users outside root and the daemon's group: who and which program, but not
    /// the arguments, which may hold what their user did not mean to publish.
    public var withoutArguments: Holder {
        var shown = self
        shown.command = command.flatMap { $0.split(separator: " ").first }.map { String($0.split(separator: "/").last ?? $0) }
        return shown
    }

    /// `uid 1000 (alice), pid 4242 'pytest -k offline'`.
    public var description: String {
        var text = "uid \(uid)"
        if let user { text += " (\(user))" }
        text += ", pid \(pid)"
        if let command, !command.isEmpty { text += " '\(command)'" }
        return text
    }
}
