import CNFTables

/// nft's language handed to libnftables rather than to an `nft` process: one context per call,
/// in the network namespace the calling thread is in.
public enum NFTablesCommands {
    /// Runs `commands` as one transaction: all of them take effect, or none. Returns what nft
    /// printed (a `list` command's output); a refusal carries nft's first line as its reason and
    /// the whole of what nft said as its kernel message.
    @discardableResult
    public static func run(_ commands: String) throws(NetlinkError) -> String {
        guard let context = nft_ctx_new(UInt32(NFT_CTX_DEFAULT)) else {
            throw NetlinkError(code: .other, operation: "make a libnftables context", reason: "out of memory")
        }
        defer { nft_ctx_free(context) }
        _ = nft_ctx_buffer_output(context)
        _ = nft_ctx_buffer_error(context)
        guard nft_run_cmd_from_buffer(context, commands) != 0 else {
            return nft_ctx_get_output_buffer(context).map { String(cString: $0) } ?? ""
        }
        let reason = nft_ctx_get_error_buffer(context).map { String(cString: $0) } ?? ""
        let firstLine = reason.split(separator: "\n").first.map(String.init) ?? "no reason given"
        let code: NetlinkError.Code = reason.contains("Operation not permitted") ? .notPermitted
            : reason.contains("No such file or directory") ? .notFound : .other
        throw NetlinkError(code: code, operation: "run nftables commands", reason: firstLine, kernelMessage: reason.isEmpty ? nil : reason)
    }
}
