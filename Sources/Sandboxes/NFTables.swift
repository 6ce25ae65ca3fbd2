import Netlink

/// The sandboxes' NAT rules in nft's language, through libnftables (`NFTablesCommands`), with
/// the refusal in the sandboxes' own words.
public final class NFTables {
    public init() throws(SandboxError) {}

    /// Runs `commands` as one transaction: all of them take effect, or none. Returns what nft
    /// printed (a `list` command's ruleset).
    @discardableResult
    public func run(_ commands: String) throws(SandboxError) -> String {
        do {
            return try NFTablesCommands.run(commands)
        } catch {
            throw SandboxError(
                code: .natFailed,
                message: "nftables refused '\(commands.split(separator: "\n").first ?? "")': \(error.reason)",
                kernelReason: error.kernelMessage ?? ""
            )
        }
    }
}
