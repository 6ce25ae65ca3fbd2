#if canImport(FoundationEssentials)
import Conditions
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Profiles

/// The control socket's file: its directory, a stale file from a crashed daemon, its mode.
package enum SocketFile {
    /// Creates the socket's directory if needed and makes sure no live daemon owns the path.
    static func prepare(path: String) throws(DaemonError) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        } catch {
            throw DaemonError(code: .socket, message: "cannot create \(directory) for the control socket: \(fileErrorReason(error))")
        }
        guard FileManager.default.fileExists(atPath: path) else { return }
        if isListening(path: path) {
            throw DaemonError(code: .socketInUse, message: "another linkcondd is already listening on \(path); stop it first or pass a different --socket")
        }
    }

    /// Every local user may connect: reading status is open to all, and each change is
    /// authorized by the peer's credentials.
    static func openToEveryone(path: String) throws(DaemonError) {
        guard chmod(path, 0o666) == 0 else {
            throw DaemonError(code: .socket, message: "cannot set the mode of \(path): \(String(cString: strerror(errno)))")
        }
    }

    package static func remove(path: String) {
        unlink(path)
    }

    /// Whether something accepts connections on the socket at `path`.
    static func isListening(path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return withAddress(of: path, { connect(descriptor, $0, $1) }) == 0
    }

    /// Calls `body` with `path` as a Unix socket address and the address's length (for bind,
    /// connect); `nil` when the path is too long for one.
    static func withAddress<Result>(of path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8)
            buffer[path.utf8.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
