#if canImport(FoundationEssentials)
import Conditions
import ControlHTTP
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// `sd_notify` without libsystemd: one datagram to `$NOTIFY_SOCKET`, when systemd set it.
public struct SystemdNotifier: Sendable {
    let socketPath: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func ready(status: String) {
        send("READY=1\nSTATUS=\(status)\nMAINPID=\(getpid())")
    }

    public func stopping() {
        send("STOPPING=1")
    }

    private func send(_ message: String) {
        guard let socketPath else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        // An abstract socket is written with a leading '@' and addressed with a leading NUL.
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        _ = message.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, text, strlen(text), 0, $0, length)
                }
            }
        }
    }

    /// The listening socket systemd passed, when started by `linkcondd.socket`.
    public static func inheritedSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> CInt? {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
        else { return nil }
        return 3
    }
}
