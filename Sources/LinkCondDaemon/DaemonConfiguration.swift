import Conditions
import ControlHTTP
import ControlAPI
import Shaping

/// Everything the daemon is told at start-up.
public struct DaemonConfiguration: Sendable {
    /// The interface to shape.
    public var interface: String
    /// The control socket: a path to bind, or one systemd passed.
    public var socket: SocketSource
    /// Profile directories, searched in order; an earlier one overrides a later one.
    public var profileDirectories: [String]
    public var exemptions: Exemptions
    /// Holds the state file a restarted daemon recovers from (`/run/linkcond/state`).
    public var stateDirectory: String
    /// The change log behind `linkcond history`; `nil` keeps it in memory only.
    public var historyFile: String?
    /// Members of this group may change the condition, besides root.
    public var groupName: String
    /// Serve the test hook that fails a chosen netlink step.
    public var faultInjection: Bool
    /// Also serve `GET /metrics` on this TCP address (on loopback), for Prometheus.
    public var metricsListen: SocketSource?

    public static let defaultSocketPath = ControlSocket.defaultPath
    public static let defaultStateDirectory = "/run/linkcond/state"
    public static let defaultHistoryFile = "/var/lib/linkcond/history.jsonl"
    public static let systemProfileDirectory = "/etc/linkcond/profiles"
    public static let defaultGroup = "linkcond"

    public init(
        interface: String,
        socket: SocketSource,
        profileDirectories: [String],
        exemptions: Exemptions,
        stateDirectory: String = defaultStateDirectory,
        historyFile: String? = nil,
        groupName: String = defaultGroup,
        faultInjection: Bool = false,
        metricsListen: SocketSource? = nil
    ) {
        self.interface = interface
        self.socket = socket
        self.profileDirectories = profileDirectories
        self.exemptions = exemptions
        self.stateDirectory = stateDirectory
        self.historyFile = historyFile
        self.groupName = groupName
        self.faultInjection = faultInjection
        self.metricsListen = metricsListen
    }

    /// The path clients connect to, for messages.
    public var socketDescription: String { socket.description }
}
