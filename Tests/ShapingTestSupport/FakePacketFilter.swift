import Foundation
import Netlink
import Profiles
import Shaping

/// nftables as a model: the tables each transaction left, by name, with the commands that
/// wrote them; a transaction refused leaves them as they were.
public final class FakePacketFilter: PacketFilterKernel, @unchecked Sendable {
    private let lock = NSLock()
    private var _tables: [String: String] = [:]
    private var _transactions: [String] = []
    private var _refusal: (@Sendable (String) -> NetlinkError?)?
    private var _listing = ""
    private var _unreachableRules = false
    private var _answered: [String: [UInt16: QueueDuty]] = [:]
    private var _downLinks: Set<String> = []
    private var _linkRefusal: NetlinkError?

    public init() {}

    /// Each table there, with the commands that last wrote it whole.
    public var tables: [String: String] { lock.withLock { _tables } }
    /// Every transaction run, refused or not, in order.
    public var transactions: [String] { lock.withLock { _transactions } }
    /// A refusal for a transaction, given its commands.
    public var refusal: (@Sendable (String) -> NetlinkError?)? {
        get { lock.withLock { _refusal } }
        set { lock.withLock { _refusal = newValue } }
    }

    /// What `list table` prints: the counters a test pretends the rules have.
    public var listing: String {
        get { lock.withLock { _listing } }
        set { lock.withLock { _listing = newValue } }
    }

    public var isLoaded: Bool { true }

    /// Whether the unreachable policy rules are there.
    public var unreachableRules: Bool { lock.withLock { _unreachableRules } }

    public func setUnreachableRules(_ present: Bool) throws(NetlinkError) {
        lock.withLock { _unreachableRules = present }
    }

    /// The interfaces whose link linkcond took down.
    public var downLinks: Set<String> { lock.withLock { _downLinks } }
    /// A refusal for every change of a link's state.
    public var linkRefusal: NetlinkError? {
        get { lock.withLock { _linkRefusal } }
        set { lock.withLock { _linkRefusal = newValue } }
    }

    public func setLinkDown(_ down: Bool, interface: String) throws(NetlinkError) {
        let refusal = lock.withLock { () -> NetlinkError? in
            guard _linkRefusal == nil else { return _linkRefusal }
            if down { _downLinks.insert(interface) } else { _downLinks.remove(interface) }
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The queues the responder takes, by table.
    public var answered: [String: [UInt16: QueueDuty]] { lock.withLock { _answered } }

    public func answerQueues(_ queues: [UInt16: QueueDuty], forTable table: String) throws(NetlinkError) -> [UInt16: QueueDuty] {
        lock.withLock {
            let previous = _answered[table] ?? [:]
            _answered[table] = queues.isEmpty ? nil : queues
            return previous
        }
    }

    public func run(_ commands: String) throws(NetlinkError) -> String {
        let refusal = lock.withLock { () -> NetlinkError? in
            _transactions.append(commands)
            return _refusal?(commands)
        }
        if let refusal { throw refusal }
        return lock.withLock {
            if commands == "list tables inet" {
                return _tables.keys.sorted().map { "table inet \($0)\n" }.joined()
            }
            if commands.hasPrefix("list table ") { return _listing }
            // `table inet T`, `delete table inet T`, then `table inet T {…}` when it is written anew.
            let lines = commands.split(separator: "\n")
            guard let name = lines.first?.split(separator: " ").last.map(String.init) else { return "" }
            _tables[name] = lines.count > 2 ? commands : nil
            return ""
        }
    }
}
