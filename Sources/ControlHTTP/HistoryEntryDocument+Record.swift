import Conditions
import ControlAPI

extension HistoryEntryDocument {
    /// A kept change of condition, as `GET /v1/history` shows it.
    package init(_ record: HistoryRecord) {
        self.init(
            time: record.time, condition: record.condition, from: record.from, to: record.to, reason: record.reason,
            requester: record.requester.map { Holder(uid: $0.uid, user: $0.user, pid: $0.pid, command: $0.command) },
            detail: record.detail
        )
    }
}
