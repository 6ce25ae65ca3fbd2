import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Profiles

// What the conditioner shows: its status, profiles and history as the API's documents, and
// the history it keeps of every change.

extension Conditioner {
    /// The condition in force; `verbose` adds linkcond's objects as the kernel has them.
    public func status(verbose: Bool = false) -> StatusResponse {
        var status = status()
        if verbose {
            status.kernel = convergence.kernelObjects()
        }
        return status
    }

    public func status() -> StatusResponse {
        let effective = policy.effective
        return StatusResponse(
            interface: target.interface,
            ifb: target.ifb,
            active: effective != nil,
            profile: effective.map(ProfileDocument.init),
            since: policy.since.formatted(.iso8601),
            exemptions: convergence.planner.exemptions.ports.map(\.description) + convergence.planner.exemptions.networks.map(\.description),
            lease: policy.lease.map(document)
        )
    }

    public func profiles() -> ProfileListResponse {
        ProfileListResponse(
            profiles: catalog.sortedEntries.map(ProfileSummary.init),
            problems: catalog.problems.map(ProfileProblem.init)
        )
    }

    public func profile(named name: String) throws(UnknownProfileError) -> ProfileDocument {
        ProfileDocument(try catalog.entry(named: name))
    }

    public func history(limit: Int) -> HistoryResponse {
        HistoryResponse(entries: history.recent(limit))
    }

    private func document(_ lease: Lease) -> LeaseDocument {
        LeaseDocument(
            profile: lease.entry.profile.name,
            holder: lease.holder.document,
            kind: lease.clientBound ? .clientBound : .timed,
            expires: lease.expires?.formatted(.iso8601),
            secondsLeft: lease.secondsLeft,
            restores: policy.baseline?.profile.name ?? "off"
        )
    }

    func record(from previous: CatalogEntry?, reason: String, requester: Requester?, detail: String?) {
        record(from: previous?.profile.name ?? "off", to: policy.effective?.profile.name ?? "off", reason: reason, requester: requester, detail: detail)
    }

    func record(from: String?, to: String, reason: String, requester: Requester?, detail: String?) {
        let from = from ?? "off"
        var line = "condition: \(from) -> \(to) on \(target.interface) (\(reason))"
        if let requester { line += " by \(requester)" }
        if let detail { line += "; \(detail)" }
        logger.notice("\(line)")
        history.record(HistoryEntryDocument(
            time: Date().formatted(.iso8601), from: from, to: to, reason: reason,
            requester: requester?.document, detail: detail
        ))
    }
}
