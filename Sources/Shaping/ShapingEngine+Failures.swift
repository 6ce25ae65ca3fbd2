import Netlink
import Profiles

// A target's failure rules: one nftables table, replaced whole in one transaction.

extension ShapingEngine {
    /// Makes the kernel hold exactly `rules` for `target`: its table written anew, or removed
    /// (if it is there) when `rules` is `nil`. All or nothing: nftables takes the whole
    /// transaction or none of it.
    public func install(_ rules: FailureRuleset?, on target: ShapingTarget) throws(ShapingError) {
        let table = FailureRuleset.tableName(for: target.interface)
        guard let filter else {
            guard rules != nil else { return }
            throw ShapingError(code: .kernelRefused, message: "cannot put a failure on \(target.interface): this linkcondd has no nftables")
        }
        guard let rules else {
            // Removed only where it is: a kernel without nftables' inet family (User-mode
            // Linux's) has no table to remove, and must not be asked to make one.
            stopAnsweringQueues(for: table)
            guard filter.isLoaded, let tables = try? failureTables(), tables.contains(table) else { return }
            logger.debug("nftables: remove table inet \(table)")
            do {
                try filter.run("delete table inet \(table)\n")
            } catch {
                throw ShapingError(failureRulesOn: target, table: table, removing: true, refusal: error)
            }
            removeUnreachableRulesIfUnused(remaining: tables.filter { $0 != table })
            return
        }
        // The responder listens before the table queues anything to it.
        let answered: [UInt16: QueueDuty]
        do {
            answered = try filter.answerQueues(rules.queues, forTable: table)
        } catch {
            throw ShapingError(code: .kernelRefused, message: "cannot take the queued packets of \(target.interface)'s failure (netfilter queues \(rules.queues.keys.sorted())): \(error.reason)", netlink: error)
        }
        do {
            logger.debug("nftables: write table inet \(table)")
            try filter.run(rules.commands)
        } catch {
            _ = try? filter.answerQueues(answered, forTable: table)
            throw ShapingError(failureRulesOn: target, table: table, removing: false, refusal: error)
        }
        guard rules.needsUnreachableRule else { return }
        do {
            try filter.setUnreachableRules(true)
        } catch {
            // The filter's own rules still fail those datagrams, with EPERM at the send.
            logger.warning("cannot add the routing rules that make an offline datagram unroutable: \(error); its send fails with EPERM instead")
        }
    }

    /// Takes the target's link down, or brings it back if linkcond took it down (a failure's
    /// `link-down`).
    public func setLinkDown(_ down: Bool, on target: ShapingTarget) throws(ShapingError) {
        guard let filter else {
            guard down else { return }
            throw ShapingError(code: .kernelRefused, message: "cannot take the link of \(target.interface) down: this linkcondd cannot reach its namespace's links")
        }
        do {
            logger.debug("link: \(down ? "take \(target.interface) down" : "bring \(target.interface) back")")
            try filter.setLinkDown(down, interface: target.interface)
        } catch {
            let code: ShapingError.Code = error.code == .namespaceGone ? .namespaceGone : error.code == .notPermitted ? .notPermitted : .kernelRefused
            throw ShapingError(code: code, message: "cannot \(down ? "take the link of \(target.interface) down" : "bring the link of \(target.interface) back"): \(error)", netlink: error)
        }
    }

    /// The responder stops answering for `table`, whose rules no longer queue anything.
    private func stopAnsweringQueues(for table: String) {
        do {
            try filter?.answerQueues([:], forTable: table)
        } catch {
            logger.warning("cannot stop taking the queued packets of table inet \(table): \(error)")
        }
    }

    /// The unreachable policy rules go with the last failure table of the namespace: `remaining`
    /// when the caller knows them, else as the kernel lists them now.
    public func removeUnreachableRulesIfUnused(remaining: [String]? = nil) {
        guard let filter, (remaining ?? (try? failureTables()))?.isEmpty == true else { return }
        do {
            try filter.setUnreachableRules(false)
        } catch {
            logger.warning("cannot remove linkcond's unreachable routing rules: \(error)")
        }
    }

    /// The failure tables linkcond has in this engine's namespace (`linkcond_failures_eth0`): empty where
    /// it has no nftables, or none are there.
    public func failureTables() throws(ShapingError) -> [String] {
        guard let filter, filter.isLoaded else { return [] }
        do {
            return Self.failureTables(inListing: try filter.run("list tables inet"))
        } catch where (error.kernelMessage ?? error.reason).contains("Operation not supported") {
            // nftables without the inet family: no table of linkcond's can be there.
            return []
        } catch {
            throw ShapingError(code: .kernelRefused, message: "cannot list the nftables tables: \(error.reason)", netlink: error)
        }
    }

    /// What the failure rules of `target` refused or dropped so far, in packets, by the tag of
    /// the condition they belong to (`FailureRuleset.tag(of:)`); empty when it has no table.
    public func failureCounts(on target: ShapingTarget) throws(ShapingError) -> [String: UInt64] {
        guard let filter else { return [:] }
        let table = FailureRuleset.tableName(for: target.interface)
        do {
            return FailureRuleset.packetCounts(inListing: try filter.run("list table inet \(table)"))
        } catch {
            throw ShapingError(code: .kernelRefused, message: "cannot read the nftables table inet \(table): \(error.reason)", netlink: error)
        }
    }

    /// Removes a failure table whatever its target (a leftover of a condition that is gone).
    public func removeFailureTable(_ table: String) throws(ShapingError) {
        guard let filter, table.hasPrefix(FailureRuleset.tablePrefix) else { return }
        do {
            try filter.run("delete table inet \(table)\n")
        } catch {
            throw ShapingError(code: .kernelRefused, message: "cannot remove the nftables table inet \(table): \(error.reason)", netlink: error)
        }
        stopAnsweringQueues(for: table)
        removeUnreachableRulesIfUnused()
    }

    /// The names of linkcond's failure tables in `nft list tables inet`'s output.
    static func failureTables(inListing listing: String) -> [String] {
        inetTables(inListing: listing, prefix: FailureRuleset.tablePrefix)
    }

    /// The names of the inet tables starting with `prefix` in `nft list tables inet`'s output.
    package static func inetTables(inListing listing: String, prefix: String) -> [String] {
        listing.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "table", words[1] == "inet", words[2].hasPrefix(prefix) else { return nil }
            return String(words[2])
        }
    }
}

extension ShapingError {
    /// nftables refused a target's failure table: a missing module is named as such (Debian
    /// builds nft_reject_inet and nf_tables as modules), anything else with nft's reason.
    init(failureRulesOn target: ShapingTarget, table: String, removing: Bool, refusal: NetlinkError) {
        let what = removing ? "remove the failure rules of \(target.interface) (table inet \(table))"
            : "put the failure rules of \(target.interface) in force (table inet \(table))"
        let reason = refusal.reason
        if refusal.code == .namespaceGone {
            self.init(code: .namespaceGone, message: "cannot \(what): \(refusal)", netlink: refusal)
        } else if refusal.code == .notPermitted {
            self.init(code: .notPermitted, message: "not permitted to \(what): linkcondd needs root or CAP_NET_ADMIN (\(reason))", netlink: refusal)
        } else if (refusal.kernelMessage ?? reason).contains("Could not process rule: No such file or directory") {
            self.init(
                code: .missingKernelModule,
                message: "the kernel lacks nf_tables or nft_reject_inet, needed to \(what); load them with 'modprobe nft_reject_inet' or use a kernel that has them (\(reason))",
                netlink: refusal
            )
        } else {
            self.init(code: .kernelRefused, message: "nftables refused to \(what): \(reason)", netlink: refusal)
        }
    }
}
