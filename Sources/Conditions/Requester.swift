#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import LinkCondVocabulary

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

    /// `/proc/PID/cmdline` is NUL-separated; shown space-separated, capped for logs, and with
    /// what looks like a secret replaced by `***` (the history keeps it, and shows it to root
    /// and the daemon's group).
    static func commandLine(fromProcCmdline data: Data) -> String {
        let words = data.split(separator: 0, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
        let text = redactingSecrets(words).joined(separator: " ")
        return text.count > 200 ? String(text.prefix(197)) + "..." : text
    }

    /// Words that name a secret: `--password`, `--api-key`, `TOKEN=...`, `-p` is not one.
    private static let secretWords = ["pass", "secret", "token", "key", "auth", "credential", "cookie", "session"]

    /// The arguments with secrets masked: the value after or in a secret-sounding option
    /// (`--token X`, `--token=X`), a secret-sounding variable (`API_KEY=X`), and the password
    /// of a URL (`https://user:X@host`).
    static func redactingSecrets(_ words: [String]) -> [String] {
        func soundsSecret(_ name: Substring) -> Bool {
            let lowered = name.lowercased()
            return secretWords.contains { lowered.contains($0) }
        }
        var result: [String] = []
        var hideNext = false
        for word in words {
            if hideNext {
                result.append("***")
                hideNext = false
                continue
            }
            if word.hasPrefix("-"), let equals = word.firstIndex(of: "=") {
                result.append(soundsSecret(word[..<equals]) ? word[...equals] + "***" : word)
            } else if word.hasPrefix("--"), soundsSecret(word.dropFirst(2)) {
                result.append(word)
                hideNext = true
            } else if !word.hasPrefix("-"), let equals = word.firstIndex(of: "="), soundsSecret(word[..<equals]) {
                result.append(word[...equals] + "***")
            } else if let scheme = word.firstRange(of: "://"), let at = word[scheme.upperBound...].firstIndex(of: "@"),
                      let colon = word[scheme.upperBound..<at].firstIndex(of: ":") {
                result.append(word[..<word.index(after: colon)] + "***" + word[at...])
            } else {
                result.append(word)
            }
        }
        return result
    }

    static func userName(_ uid: UInt32) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    public var holder: Holder {
        Holder(uid: uid, user: user, pid: pid, command: command)
    }

    public var description: String { holder.description }
}
