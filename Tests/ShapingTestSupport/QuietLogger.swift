import Logging

extension Logger {
    /// A logger that drops everything, for tests whose failures are the point.
    public static let quiet = Logger(label: "linkcond.test") { _ in SwiftLogNoOpLogHandler() }
}
