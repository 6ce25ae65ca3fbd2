import Conditions
import Glibc

/// Decides who may change the condition: root, and members of one group. Everyone may read.
public struct Authorizer: Sendable {
    /// The group whose members may change the condition, e.g. `linkcond`.
    public var groupName: String
    /// Its id, if the group exists; without it only root may change anything.
    public var groupID: UInt32?

    public init(groupName: String, groupID: UInt32?) {
        self.groupName = groupName
        self.groupID = groupID
    }

    /// Looks the group up in the system's group database.
    public static func system(groupName: String) -> Authorizer {
        let group = getgrnam(groupName)
        return Authorizer(groupName: groupName, groupID: group.map { $0.pointee.gr_gid })
    }

    public func mayChange(_ requester: Requester) -> Bool {
        if requester.uid == 0 { return true }
        guard let groupID else { return false }
        return requester.gid == groupID || requester.groups.contains(groupID)
    }

    /// Why `requester` may not change anything, for a 403.
    public func refusal(for requester: Requester, capturing: Bool = false) -> String {
        if capturing {
            return "a capture holds other people's packets: it needs root or membership in the group '\(groupName)'; \(requester.description) has neither"
        }
        return "changing the network condition needs root or membership in the group '\(groupName)'; \(requester.description) has neither (reading status and profiles is open to everyone)"
    }
}
