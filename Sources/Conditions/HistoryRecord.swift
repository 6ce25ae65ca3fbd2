#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary

/// One change of condition as the daemon keeps it: in memory, and one JSON line each in its
/// history file. The file's format is this type's own, not the API's: its keys are those the
/// daemon has always written, so that files written before it was its own read without loss.
package struct HistoryRecord: Codable, Sendable, Equatable {
    /// Who asked for a change: the process at the other end of the control socket.
    package struct Asker: Codable, Sendable, Equatable {
        package var uid: UInt32
        package var user: String?
        package var pid: Int32
        package var command: String?
    }

    /// ISO 8601, UTC.
    package var time: String
    /// The condition's id; absent in lines older than plural conditions (all on the default interface).
    package var condition: String?
    /// A profile's name, or `off`.
    package var from: String
    package var to: String
    /// `activate`, `off`, `lease`, `lease-expired`, `lease-released`, `client-lost`, `taken-over`,
    /// `reload`, `startup`, `shutdown`, and the scenarios' reasons.
    package var reason: String
    /// Absent for the daemon's own changes (expiry, start-up, shutdown, SIGHUP reload).
    package var requester: Asker?
    package var detail: String?
}

extension Requester {
    var asker: HistoryRecord.Asker {
        HistoryRecord.Asker(uid: uid, user: user, pid: pid, command: command)
    }
}

extension HistoryRecord {
    /// The change of condition `id` from `from` (`nil`: off) to `to`, made now (`time`).
    init(_ id: ConditionID, from: String?, to: String, reason: String, requester: Requester?, detail: String?, at time: Date) {
        self.init(
            time: time.formatted(.iso8601), condition: id.description, from: from ?? "off", to: to, reason: reason,
            requester: requester?.asker, detail: detail
        )
    }

    /// The daemon log's line for the change, which names the requester as `requester` describes itself.
    func logLine(by requester: Requester?) -> String {
        var line = "condition: \(from) -> \(to) on \(condition ?? "") (\(reason))"
        if let requester { line += " by \(requester)" }
        if let detail { line += "; \(detail)" }
        return line
    }
}
