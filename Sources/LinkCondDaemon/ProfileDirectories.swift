#if canImport(FoundationEssentials)
import Conditions
import ControlHTTP
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// Where profiles come from. One rule: the directories given with `--profiles` (or, without
/// any, `/etc/linkcond/profiles`), then the built-in profiles. An earlier directory's profile
/// overrides a later one of the same name.
public enum ProfileDirectories {
    /// The search path. A directory given with `--profiles` must exist: a typo there would
    /// otherwise leave the daemon with fewer profiles than meant, silently. The default
    /// `/etc/linkcond/profiles` is optional.
    public static func searchPath(
        given: [String], builtIn includeBuiltIn: Bool, executablePath: String = CommandLine.arguments[0]
    ) throws(DaemonError) -> [String] {
        for directory in given {
            var info = stat()
            guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw DaemonError(
                    code: .profiles,
                    message: "the profile directory \(directory) (--profiles) does not exist or is not a directory; under systemd, /home and /tmp are hidden from the daemon (ProtectHome, PrivateTmp): use /etc/linkcond/profiles"
                )
            }
        }
        var path = given.isEmpty ? [DaemonConfiguration.systemProfileDirectory] : given
        if includeBuiltIn, let builtIn = builtIn(executablePath: executablePath), !path.contains(builtIn) {
            path.append(builtIn)
        }
        return path
    }

    /// Where profiles saved through the API go: the first directory searched, so that they
    /// override a built-in of the same name as a file put there by hand does; never the
    /// built-in directory itself (a development build run with `--profiles profiles`).
    public static func savingDirectory(of searchPath: [String], executablePath: String = CommandLine.arguments[0]) -> String? {
        guard let first = searchPath.first else { return nil }
        let builtIn = builtIn(executablePath: executablePath).map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        return URL(fileURLWithPath: first).standardizedFileURL.path == builtIn ? nil : first
    }

    /// The built-in profiles: `PREFIX/share/linkcond/profiles` next to an installed binary, or
    /// the `profiles/` directory of the source checkout a development build runs from.
    public static func builtIn(executablePath: String) -> String? {
        let fileManager = FileManager.default
        let executable = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath()
        let binDirectory = executable.deletingLastPathComponent()
        let installed = binDirectory.deletingLastPathComponent().appendingPathComponent("share/linkcond/profiles")
        if fileManager.fileExists(atPath: installed.path) {
            return installed.path
        }
        var directory = binDirectory
        while directory.path != "/" {
            let profiles = directory.appendingPathComponent("profiles")
            if fileManager.fileExists(atPath: directory.appendingPathComponent("Package.swift").path),
               fileManager.fileExists(atPath: profiles.path) {
                return profiles.path
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// Where scenarios come from: the `scenarios` directory beside each profile directory
    /// (`/etc/linkcond/scenarios`, `PREFIX/share/linkcond/scenarios`, a checkout's `scenarios/`),
    /// in the same order, so that a user's scenario overrides a built-in one of the same name.
    public static func scenarioDirectories(beside profileDirectories: [String]) -> [String] {
        var directories: [String] = []
        for profiles in profileDirectories {
            let scenarios = URL(fileURLWithPath: profiles).deletingLastPathComponent().appendingPathComponent("scenarios").path
            if !directories.contains(scenarios) { directories.append(scenarios) }
        }
        return directories
    }
}
