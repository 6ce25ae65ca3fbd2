import CNetlink
import Glibc

/// A routing policy rule of linkcond's: packets with its firewall mark have no route
/// (`ip rule add fwmark MARK unreachable`), so that the socket that sent one is told
/// "network unreachable" at once.
public struct UnreachableRule: Hashable, Sendable {
    public var family: Int32
    public var mark: UInt32
    public var priority: UInt32

    public init(family: Int32, mark: UInt32, priority: UInt32) {
        self.family = family
        self.mark = mark
        self.priority = priority
    }
}

extension NetlinkSocket {
    /// Adds `rule`; one already there is fine.
    public func addUnreachableRule(_ rule: UnreachableRule) throws(NetlinkError) {
        let object = try Self.ruleObject(rule)
        do {
            try perform("add the routing rule \(Self.describe(rule))") { rtnl_rule_add($0, object.pointer, NLM_F_CREATE | NLM_F_EXCL) }
        } catch where error.code == .exists {
            return
        }
    }

    /// Deletes `rule`; one already gone is fine.
    public func deleteUnreachableRule(_ rule: UnreachableRule) throws(NetlinkError) {
        let object = try Self.ruleObject(rule)
        do {
            try perform("delete the routing rule \(Self.describe(rule))") { rtnl_rule_delete($0, object.pointer, 0) }
        } catch where error.code == .notFound {
            return
        }
    }

    private static func ruleObject(_ rule: UnreachableRule) throws(NetlinkError) -> NetlinkObject {
        let object = try NetlinkObject(allocating: { rtnl_rule_alloc() }, what: "routing rule")
        rtnl_rule_set_family(object.pointer, rule.family)
        rtnl_rule_set_prio(object.pointer, rule.priority)
        rtnl_rule_set_mark(object.pointer, rule.mark)
        rtnl_rule_set_mask(object.pointer, 0xFFFF_FFFF)
        rtnl_rule_set_action(object.pointer, UInt8(FR_ACT_UNREACHABLE))
        return object
    }

    /// `priority 32 fwmark 0x6c630001 unreachable (IPv6)`, as `ip rule` prints one.
    static func describe(_ rule: UnreachableRule) -> String {
        "priority \(rule.priority) fwmark 0x\(String(rule.mark, radix: 16)) unreachable (\(rule.family == AF_INET6 ? "IPv6" : "IPv4"))"
    }
}
