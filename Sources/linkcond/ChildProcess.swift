import Dispatch
import Foundation
import Glibc

/// Runs a command in the foreground with linkcond's own stdin, stdout and stderr.
enum ChildProcess {
    struct LaunchError: Error, CustomStringConvertible {
        var command: String
        var reason: String
        var description: String { "cannot run \(command): \(reason)" }
    }

    /// Runs `arguments` (looked up in `PATH`) and returns its exit status, or 128 + the signal
    /// that ended it, as shells do. SIGTERM and SIGHUP sent to linkcond are passed on to it;
    /// SIGINT from the terminal reaches it directly, so linkcond only ignores that one.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let executable = locate(arguments[0]) else {
            throw LaunchError(command: arguments[0], reason: "not found in PATH, or not executable")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        let forwarded = [SIGTERM, SIGHUP, SIGQUIT]
        let sources = forwarded.map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber)
            source.setEventHandler { kill(process.processIdentifier, signalNumber) }
            source.resume()
            return source
        }
        signal(SIGINT, SIG_IGN)
        defer {
            sources.forEach { $0.cancel() }
            (forwarded + [SIGINT]).forEach { signal($0, SIG_DFL) }
        }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in
                switch finished.terminationReason {
                case .exit: continuation.resume(returning: finished.terminationStatus)
                case .uncaughtSignal: continuation.resume(returning: 128 + finished.terminationStatus)
                @unknown default: continuation.resume(returning: 1)
                }
            }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: LaunchError(command: arguments[0], reason: "\(error.localizedDescription)"))
            }
        }
        return status
    }

    /// `name` itself when it contains a slash, else the first executable of that name in `PATH`.
    static func locate(_ name: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        if name.contains("/") {
            return access(name, X_OK) == 0 ? name : nil
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
