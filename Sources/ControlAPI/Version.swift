/// The release both binaries report with `--version`; the API itself is versioned by its path.
public enum LinkCondVersion {
    public static let current = "0.4.0"
}
