import Foundation
import Netlink
import Shaping

/// nftables as a model: the tables each transaction left, by name, with the commands that
/// wrote them; a transaction refused leaves them as they were.
public final class FakePacketFilter: PacketFilterKernel, @unchecked Sendable {
    private let lock = NSLock()
    private var _tables: [String: String] = [:]
    private var _transactions: [String] = []
    private var _refusal: (@Sendable (String) -> NetlinkError?)?

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

    public var isLoaded: Bool { true }

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
            // `table inet T`, `delete table inet T`, then `table inet T {…}` when it is written anew.
            let lines = commands.split(separator: "\n")
            guard let name = lines.first?.split(separator: " ").last.map(String.init) else { return "" }
            _tables[name] = lines.count > 2 ? commands : nil
            return ""
        }
    }
}
