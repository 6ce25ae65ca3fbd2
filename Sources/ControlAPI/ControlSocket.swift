/// Where the daemon and its clients meet unless told otherwise.
public enum ControlSocket {
    /// The packaged daemon's socket (and its systemd socket unit's): the daemon binds it by
    /// default, and every client connects to it when `$LINKCOND_SOCKET` is not set.
    public static let defaultPath = "/run/linkcond/control.sock"
}
