import Conditions
import Synchronization

/// Counts open control connections per user, so that one local user cannot take every file
/// descriptor or every byte of memory the daemon has; root has a share of its own. The control
/// socket's users are its peers' (`SO_PEERCRED`), the metrics listener's the owners of its
/// peers' sockets (`LoopbackPeer`).
package final class ConnectionLimiter: Sendable {
    private struct Counts {
        var byUser: [UInt32: Int] = [:]
        var others = 0
    }

    private let limits: ControlLimits
    private let counts = Mutex(Counts())

    init(limits: ControlLimits) {
        self.limits = limits
    }

    /// Takes a slot for a new connection of `uid`, or says why there is none. Every admitted
    /// connection must be `release`d when it closes.
    func admit(uid: UInt32) -> String? {
        counts.withLock { counts in
            let open = counts.byUser[uid, default: 0]
            if uid == 0 {
                guard open < limits.connectionsOfRoot else {
                    return "root already has \(open) connections open (the limit)"
                }
            } else {
                guard open < limits.connectionsPerUser else {
                    return uid == PeerCredentials.scraper.uid
                        ? "TCP clients whose user cannot be told already have \(open) connections open, the limit they share"
                        : "uid \(uid) already has \(open) connections open, the limit per user"
                }
                guard counts.others < limits.connectionsOfOthers else {
                    return "users other than root have \(counts.others) connections open, the limit"
                }
                counts.others += 1
            }
            counts.byUser[uid] = open + 1
            return nil
        }
    }

    func release(uid: UInt32) {
        counts.withLock { counts in
            guard let open = counts.byUser[uid], open > 0 else { return }
            counts.byUser[uid] = open == 1 ? nil : open - 1
            if uid != 0 { counts.others -= 1 }
        }
    }

    /// Open connections per user, for tests and the log.
    var open: [UInt32: Int] {
        counts.withLock { $0.byUser }
    }
}
