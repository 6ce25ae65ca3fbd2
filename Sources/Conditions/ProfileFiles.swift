#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import NameMatching
import Profiles

/// The operator's own profiles as files: the one directory the daemon saves profiles in (the
/// first it searches, `/etc/linkcond/profiles` unless `--profiles` says otherwise), where a saved
/// profile is a YAML file like any other. Every profile from elsewhere — the built-ins, a later
/// directory's — is read-only.
public struct ProfileFiles: Sendable {
    /// Where profiles are saved; `nil` when the daemon searches no directory of its own.
    public let directory: String?

    public init(directory: String?) {
        self.directory = directory.map { $0.count > 1 && $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// Whether `entry` came from the directory profiles are saved in.
    public func isWritable(_ entry: ProfileEntry) -> Bool {
        guard let directory else { return false }
        return URL(fileURLWithPath: entry.file).deletingLastPathComponent().path == directory
    }

    /// The file a new profile called `name` goes to: its name as a file name (`My Phone 3G` →
    /// `my-phone-3g.yaml`), numbered when another file has that name already.
    func newFile(for name: String, in directory: String) -> String {
        let stem = Self.stem(for: name)
        var candidate = "\(directory)/\(stem).yaml"
        var number = 2
        while FileManager.default.fileExists(atPath: candidate) || FileManager.default.fileExists(atPath: "\(directory)/\(stem).yml") {
            candidate = "\(directory)/\(stem)-\(number).yaml"
            number += 1
        }
        return candidate
    }

    /// Letters and digits of `name` in lower case, each run of anything else one hyphen.
    static func stem(for name: String) -> String {
        var stem = ""
        for character in name.lowercased() {
            if character.isASCII, character.isLetter || character.isNumber {
                stem.append(character)
            } else if !stem.isEmpty, stem.last != "-" {
                stem.append("-")
            }
        }
        while stem.hasSuffix("-") { stem.removeLast() }
        return stem.isEmpty ? "profile" : String(stem.prefix(64))
    }

    /// Writes `yaml` to `file` whole or not at all: a hidden file beside it (no catalog reads
    /// it), flushed to disk, then renamed over it.
    func write(_ yaml: String, to file: String) throws(ProfileNotSavedError) {
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
        let temporary = "\(directory)/.\(URL(fileURLWithPath: file).lastPathComponent).\(getpid()).saving"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw ProfileNotSavedError(file: file, reason: Self.reason(errno)) }
        var failure: Int32?
        let bytes = Array(yaml.utf8)
        var written = 0
        while written < bytes.count, failure == nil {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno != EINTR { failure = errno }
            } else {
                written += count
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == nil { failure = errno }
        if failure == nil, rename(temporary, file) != 0 { failure = errno }
        if let failure {
            unlink(temporary)
            throw ProfileNotSavedError(file: file, reason: Self.reason(failure))
        }
    }

    func remove(_ file: String) throws(ProfileNotSavedError) {
        guard unlink(file) == 0 || errno == ENOENT else {
            throw ProfileNotSavedError(file: file, reason: Self.reason(errno))
        }
    }

    /// What was there before a change, to put back when the change as a whole fails.
    func contents(of file: String) -> String? {
        try? String(contentsOfFile: file, encoding: .utf8)
    }

    private static func reason(_ number: Int32) -> String {
        String(cString: strerror(number))
    }
}

/// A profile saved: its entry as the catalog now holds it, and whether it is new.
public struct SavedProfile: Sendable {
    public var entry: ProfileEntry
    public var created: Bool
}

/// A built-in profile, or one from a directory the daemon does not save in.
public struct ReadOnlyProfileError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var file: String
    /// Where profiles are saved, if anywhere.
    public var directory: String?

    public var description: String {
        guard let directory else {
            return "'\(name)' (\(file)) is read-only: the daemon has no profile directory of its own to save in"
        }
        return "'\(name)' is read-only: it comes from \(file), and profiles are saved in \(directory) only (built-in profiles are never changed); save it under another name"
    }
}

/// Saving a new profile whose name another one has, without asking to replace it.
public struct ProfileExistsError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var file: String

    public var description: String {
        "a profile named '\(name)' exists (\(file)); ask to replace it (`linkcond profile save --replace`, or \"replace\": true)"
    }
}

/// The profile file could not be written or removed.
public struct ProfileNotSavedError: Error, Sendable, CustomStringConvertible {
    /// `nil` when there is no directory to save in at all.
    public var file: String?
    public var reason: String

    static let noDirectory = ProfileNotSavedError(
        file: nil, reason: "the daemon searches no profile directory of its own (it runs with the built-in profiles only)"
    )

    public var description: String {
        file.map { "cannot write \($0): \(reason)" } ?? "cannot save profiles: \(reason)"
    }
}
