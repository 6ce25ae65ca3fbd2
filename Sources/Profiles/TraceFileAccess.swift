/// Whether a direction's `trace:` may read the file it names.
///
/// Only profiles and scenarios loaded from a directory may: their files were put there by whoever
/// may configure the daemon, and they have a directory to find a relative path in. A profile
/// given as text (a request's definition, a command line's values) has neither, and reading
/// the file it names would let any client make the root daemon read any file.
public enum TraceFileAccess: Sendable, Hashable {
    /// `trace:` names a file, relative to the profile's (or scenario's) own directory unless
    /// absolute, which is read and checked with the profile.
    case besideFile
    /// `trace:` is an error.
    case refused
}
