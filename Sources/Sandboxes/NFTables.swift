import CNFTables

/// One libnftables context: nft's language in, the kernel's answer out, without an `nft`
/// process. Not thread-safe; one owner, like `NetlinkSocket`.
public final class NFTables {
    private let context: OpaquePointer

    public init() throws(SandboxError) {
        guard let context = nft_ctx_new(UInt32(NFT_CTX_DEFAULT)) else {
            throw SandboxError(code: .natFailed, message: "cannot make a libnftables context (out of memory)")
        }
        _ = nft_ctx_buffer_output(context)
        _ = nft_ctx_buffer_error(context)
        self.context = context
    }

    deinit {
        nft_ctx_free(context)
    }

    /// Runs `commands` as one transaction: all of them take effect, or none. Returns what nft
    /// printed (a `list` command's ruleset).
    @discardableResult
    public func run(_ commands: String) throws(SandboxError) -> String {
        guard nft_run_cmd_from_buffer(context, commands) != 0 else {
            return nft_ctx_get_output_buffer(context).map { String(cString: $0) } ?? ""
        }
        let reason = nft_ctx_get_error_buffer(context).map { String(cString: $0) } ?? ""
        throw SandboxError(
            code: .natFailed,
            message: "nftables refused '\(commands.split(separator: "\n").first ?? "")': \(Self.firstLine(of: reason))",
            kernelReason: reason
        )
    }

    private static func firstLine(of text: String) -> String {
        String(text.split(separator: "\n").first ?? "no reason given")
    }
}
