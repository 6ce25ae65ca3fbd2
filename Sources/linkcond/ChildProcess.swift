import CChildProcess
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// Runs a command as a shell would run it in the foreground: same process group and terminal,
/// linkcond's stdin, stdout and stderr, default signal dispositions, and the signals other
/// processes send linkcond passed on to it.
enum ChildProcess {
    struct LaunchError: Error, CustomStringConvertible {
        var command: String
        var reason: String
        /// 127 when the command was not found, 126 when it could not be run: as shells do.
        var exitStatus: Int32
        var description: String { "cannot run \(command): \(reason)" }
    }

    /// Runs `arguments` (looked up in `PATH`) and returns its exit status, or 128 + the signal
    /// that ended it.
    static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) async throws(LaunchError) -> Int32 {
        guard let executable = locate(arguments[0], path: environment["PATH"]) else {
            throw LaunchError(command: arguments[0], reason: "not found in PATH, or not executable", exitStatus: 127)
        }
        linkcond_catch_forwarded_signals()
        defer { linkcond_stop_forwarding() }
        linkcond_close_own_descriptors_on_exec()
        let pid = try spawn(executable, arguments: arguments, environment: environment)
        linkcond_forward_to(pid)
        return await waitForExit(pid)
    }

    private static func spawn(_ executable: String, arguments: [String], environment: [String: String]) throws(LaunchError) -> pid_t {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let error = linkcond_spawn(&pid, executable, argv, envp)
        guard error == 0 else {
            throw LaunchError(command: arguments[0], reason: String(cString: strerror(error)), exitStatus: error == ENOENT ? 127 : 126)
        }
        return pid
    }

    /// Waits on a thread of its own: `waitpid` blocks, and Swift's cooperative threads must not.
    private static func waitForExit(_ pid: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: exitStatus(fromWaitStatus: status))
            }
        }
    }

    /// The exit status, or 128 + the signal number for a command a signal ended.
    static func exitStatus(fromWaitStatus status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// `name` itself when it contains a slash (posix_spawn then says what is wrong with it),
    /// else the first executable of that name in `PATH`.
    static func locate(_ name: String, path: String?) -> String? {
        if name.contains("/") {
            return name
        }
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT != S_IFDIR, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }
}
