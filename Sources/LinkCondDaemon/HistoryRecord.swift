/// One change of condition as the daemon keeps it: in memory, and one JSON line each in its
/// history file. The file's format is this type's own, not the API's: its keys are those the
/// daemon has always written, so that files written before it was its own read without loss.
struct HistoryRecord: Codable, Sendable, Equatable {
    /// Who asked for a change: the process at the other end of the control socket.
    struct Asker: Codable, Sendable, Equatable {
        var uid: UInt32
        var user: String?
        var pid: Int32
        var command: String?
    }

    /// ISO 8601, UTC.
    var time: String
    /// The condition's id; absent in lines older than plural conditions (all on the default interface).
    var condition: String?
    /// A profile's name, or `off`.
    var from: String
    var to: String
    /// `activate`, `off`, `lease`, `lease-expired`, `lease-released`, `client-lost`, `taken-over`,
    /// `reload`, `startup`, `shutdown`, and the scenarios' reasons.
    var reason: String
    /// Absent for the daemon's own changes (expiry, start-up, shutdown, SIGHUP reload).
    var requester: Asker?
    var detail: String?
}

extension Requester {
    var asker: HistoryRecord.Asker {
        HistoryRecord.Asker(uid: uid, user: user, pid: pid, command: command)
    }
}
