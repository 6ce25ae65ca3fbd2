#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where profiles come from when `--profiles` is not given.
public enum ProfileDirectories {
    /// `/etc/linkcond/profiles`, then the built-ins shipped with this binary.
    public static func defaults(executablePath: String = CommandLine.arguments[0]) -> [String] {
        [DaemonConfiguration.systemProfileDirectory] + (builtIn(executablePath: executablePath).map { [$0] } ?? [])
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
}
