import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// Who is on the other end of a control connection, from `SO_PEERCRED` and `/proc`.
public struct Requester: Sendable, Equatable, CustomStringConvertible {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    /// Supplementary groups of the peer process when it connected.
    public var groups: [UInt32]
    public var user: String?
    public var command: String?

    public init(uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32] = [], user: String? = nil, command: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.groups = groups
        self.user = user
        self.command = command
    }

    /// The daemon itself: lease expiry, start-up recovery, shutdown.
    public static let daemon = Requester(uid: getuid(), gid: getgid(), pid: getpid(), user: "linkcondd", command: "linkcondd")

    /// Completes what the kernel reported with the peer's user name, groups and command line.
    public static func fromPeer(uid: UInt32, gid: UInt32, pid: Int32) -> Requester {
        let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
        return Requester(
            uid: uid, gid: gid, pid: pid,
            groups: status.map(supplementaryGroups(inProcessStatus:)) ?? [],
            user: userName(uid),
            command: cmdline.map(commandLine(fromProcCmdline:))
        )
    }

    /// `Groups:` of `/proc/PID/status`.
    static func supplementaryGroups(inProcessStatus status: String) -> [UInt32] {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") }) else { return [] }
        return line.dropFirst("Groups:".count).split(whereSeparator: \.isWhitespace).compactMap { UInt32($0) }
    }

    /// `/proc/PID/cmdline` is NUL-separated; shown space-separated and capped for logs.
    static func commandLine(fromProcCmdline data: Data) -> String {
        let words = data.split(separator: 0, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
        let text = words.joined(separator: " ")
        return text.count > 200 ? String(text.prefix(197)) + "..." : text
    }

    static func userName(_ uid: UInt32) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    public var document: HolderDocument {
        HolderDocument(uid: uid, user: user, pid: pid, command: command)
    }

    public var description: String { document.description }
}
