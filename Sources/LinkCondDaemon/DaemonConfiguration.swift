import Shaping

/// Everything the daemon is told at start-up.
public struct DaemonConfiguration: Sendable {
    /// The interface to shape.
    public var interface: String
    /// Path of the control socket.
    public var socketPath: String
    /// Profile directories, searched in order; an earlier one overrides a later one.
    public var profileDirectories: [String]
    public var exemptions: Exemptions

    public static let defaultSocketPath = "/run/linkcond/control.sock"
    public static let systemProfileDirectory = "/etc/linkcond/profiles"

    public init(interface: String, socketPath: String, profileDirectories: [String], exemptions: Exemptions) {
        self.interface = interface
        self.socketPath = socketPath
        self.profileDirectories = profileDirectories
        self.exemptions = exemptions
    }
}
