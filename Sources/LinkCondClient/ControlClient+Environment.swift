import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ControlClient {
    /// Names the daemon's socket for every client: the CLI, the library, test harnesses.
    public static let socketEnvironmentVariable = "LINKCOND_SOCKET"
    /// Where the packaged daemon (and its systemd socket unit) listens.
    public static let defaultSocketPath = ControlSocket.defaultPath

    /// The socket `linkcond` itself would talk to: `$LINKCOND_SOCKET` when set, else the default.
    public static func socketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let fromEnvironment = environment[socketEnvironmentVariable], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        return defaultSocketPath
    }

    /// A client of the daemon `linkcond` would talk to from this process's environment.
    public init() {
        self.init(socketPath: Self.socketPath())
    }
}
