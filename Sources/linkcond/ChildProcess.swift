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

        /// exec's own refusal (`errno`), with the exit status a shell would give it.
        init(command: String, execErrno: Int32) {
            self.init(command: command, reason: String(cString: strerror(execErrno)), exitStatus: execErrno == ENOENT ? 127 : 126)
        }

        init(command: String, reason: String, exitStatus: Int32) {
            self.command = command
            self.reason = reason
            self.exitStatus = exitStatus
        }
    }

    /// `arguments` and `environment` as the NULL-terminated C arrays exec takes, alive while
    /// `body` runs.
    private static func withExecArrays<Result>(
        _ arguments: [String], _ environment: [String: String],
        _ body: ([UnsafeMutablePointer<CChar>?], [UnsafeMutablePointer<CChar>?]) -> Result
    ) -> Result {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        return body(argv, envp)
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
        var pid: pid_t = 0
        let error = withExecArrays(arguments, environment) { argv, envp in linkcond_spawn(&pid, executable, argv, envp) }
        guard error == 0 else { throw LaunchError(command: arguments[0], execErrno: error) }
        return pid
    }

    /// A command started in a network namespace of its own and held before exec, while the
    /// daemon joins that namespace to the host (`run --isolated`).
    final class IsolatedChild {
        let pid: pid_t
        private let gate: Int32
        private let report: Int32
        private var released = false

        fileprivate init(pid: pid_t, gate: Int32, report: Int32) {
            self.pid = pid
            self.gate = gate
            self.report = report
        }

        /// Lets the command run, passes signals on to it, and returns its exit status.
        func run(_ command: String) async throws(LaunchError) -> Int32 {
            precondition(!released, "an isolated child runs once")
            released = true
            let error = linkcond_release_isolated(pid, gate, report)
            defer { linkcond_stop_forwarding() }
            guard error == 0 else { throw LaunchError(command: command, execErrno: error) }
            linkcond_forward_to(pid)
            return await ChildProcess.waitForExit(pid)
        }

        /// Never released: the command exits unstarted, and is reaped.
        deinit {
            guard !released else { return }
            close(gate)
            close(report)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            linkcond_stop_forwarding()
        }
    }

    /// Starts `arguments` in a sandbox of its own (see `linkcond_spawn_isolated`), held before
    /// exec until `run()`; with `resolvConf`, that file is the sandbox's /etc/resolv.conf.
    static func isolated(
        _ arguments: [String], resolvConf: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(LaunchError) -> IsolatedChild {
        guard let executable = locate(arguments[0], path: environment["PATH"]) else {
            throw LaunchError(command: arguments[0], reason: "not found in PATH, or not executable", exitStatus: 127)
        }
        linkcond_catch_forwarded_signals()
        linkcond_close_own_descriptors_on_exec()
        var pid: pid_t = 0
        var gate: Int32 = -1
        var report: Int32 = -1
        var step: Int32 = 0
        let error = withExecArrays(arguments, environment) { argv, envp in
            linkcond_spawn_isolated(&pid, &gate, &report, &step, executable, argv, envp, resolvConf)
        }
        guard error == 0 else {
            linkcond_stop_forwarding()
            throw LaunchError(command: arguments[0], reason: isolationFailure(step: step, error: error), exitStatus: Run.Status.linkcondFailed)
        }
        return IsolatedChild(pid: pid, gate: gate, report: report)
    }

    private static func isolationFailure(step: Int32, error: Int32) -> String {
        let reason = String(cString: strerror(error))
        switch UInt32(step) {
        case LINKCOND_STEP_UNSHARE.rawValue where error == EPERM || error == ENOSPC:
            return "cannot make its sandbox (a network namespace of its own): \(reason); as a user, this needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or AppArmor's kernel.apparmor_restrict_unprivileged_userns=0), or run linkcond with sudo"
        case LINKCOND_STEP_UNSHARE.rawValue: return "cannot make its sandbox (a network namespace of its own): \(reason)"
        case LINKCOND_STEP_ID_MAP.rawValue: return "cannot map your user into its sandbox: \(reason)"
        case LINKCOND_STEP_MOUNT.rawValue: return "cannot give its sandbox a working /etc/resolv.conf: \(reason)"
        default: return reason
        }
    }

    /// Waits on a thread of its own: `waitpid` blocks, and Swift's cooperative threads must not.
    fileprivate static func waitForExit(_ pid: pid_t) async -> Int32 {
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
