#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Profiles

/// A condition on top of the baseline that ends by itself: at `expires`, or, when
/// `clientBound`, as soon as the connection of the client that asked for it closes.
struct Lease: Sendable, Equatable {
    var id: UInt64
    var entry: ProfileEntry
    var holder: Requester
    var since: Date
    var expires: Date?
    var clientBound: Bool

    func secondsLeft(at now: Date) -> Int? {
        expires.map { max(0, Int($0.timeIntervalSince(now).rounded(.up))) }
    }

    /// Whether `requester` is the one who holds it: the same user. Root's leases are root's.
    func isHeld(by requester: Requester) -> Bool {
        holder.uid == requester.uid
    }
}

/// A lease is held and the request did not ask to take over.
public struct LeaseConflictError: Error, Sendable, CustomStringConvertible {
    public var profile: String
    public var holder: Holder
    public var secondsLeft: Int?
    /// The requester is the holder (same uid): `release` ends it and brings the baseline back.
    public var heldByRequester: Bool
    public var clientBound: Bool

    public var description: String {
        let left = secondsLeft.map { " for \($0)s more" } ?? ""
        if heldByRequester {
            let ending = clientBound ? "it ends when that command exits" : "releasing it brings the previous condition back"
            return "you already hold '\(profile)' (\(holder))\(left); \(ending)"
        }
        return "'\(profile)' is held by \(holder)\(left)"
    }
}

/// There is no lease to release, or it is someone else's.
public struct NoLeaseError: Error, Sendable, CustomStringConvertible {
    public var holder: Holder?
    public var description: String {
        guard let holder else { return "there is no lease to release" }
        return "the lease is held by \(holder), not by you"
    }
}

/// The daemon is stopping and takes no more changes.
public struct DaemonStoppingError: Error, Sendable, CustomStringConvertible {
    public var description: String { "linkcondd is stopping; it removes all shaping and takes no more changes" }
}
