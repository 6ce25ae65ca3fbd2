#if canImport(FoundationEssentials)
import Conditions
import ControlHTTP
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Logging

/// Lines on stderr that read well in a terminal and in the journal: under systemd (which sets
/// `JOURNAL_STREAM`) each line starts with its syslog priority, `<5>`, and carries no timestamp,
/// since journald adds its own.
public struct DaemonLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let journald: Bool

    public init(level: Logger.Level, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.logLevel = level
        self.journald = environment["JOURNAL_STREAM"] != nil
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        var text = "\(event.message)"
        if !merged.isEmpty {
            text += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        let line = journald
            ? "<\(Self.priority(event.level))>\(text)\n"
            : "\(Date().formatted(.iso8601)) \(event.level) \(text)\n"
        // One write(2) per line: lines from concurrent tasks never interleave.
        _ = Array(line.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// syslog(3) priorities.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }
}
