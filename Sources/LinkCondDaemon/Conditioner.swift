import ControlAPI
import Foundation
import Logging
import Profiles
import Shaping

/// The daemon's state: which condition the interface is in, and the only path to change it.
///
/// An actor, so requests from several clients are applied one after another; it owns the
/// shaping engine and with it the netlink socket.
public actor Conditioner {
    /// The condition in force.
    enum State {
        case off(since: Date)
        case active(ActiveCondition)
    }

    struct ActiveCondition {
        var entry: CatalogEntry
        var plan: TrafficPlan
        var since: Date
    }

    private let engine: ShapingEngine
    private let planner: Planner
    public nonisolated let target: ShapingTarget
    private var catalog: ProfileCatalog
    private var state: State
    private let logger: Logger

    public init(engine: sending ShapingEngine, target: ShapingTarget, planner: Planner, catalog: ProfileCatalog, logger: Logger) {
        self.engine = engine
        self.target = target
        self.planner = planner
        self.catalog = catalog
        self.logger = logger
        self.state = .off(since: Date())
    }

    // MARK: Reading

    public func status() -> StatusResponse {
        switch state {
        case .off(let since):
            return statusDocument(profile: nil, since: since)
        case .active(let condition):
            return statusDocument(profile: ProfileDocument(condition.entry), since: condition.since)
        }
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

    // MARK: Changing

    /// Puts the interface into the named profile's condition.
    ///
    /// From off, the tree is built; from another profile, its values are changed in place. On
    /// any failure the previous condition stays in force and the error says why.
    public func activate(_ name: String, replacingForeign: Bool = false) throws -> StatusResponse {
        let entry = try catalog.entry(named: name)
        let plan = planner.plan(entry.profile, on: target)
        switch state {
        case .off:
            try engine.apply(plan, replacingForeign: replacingForeign)
            logger.notice("condition: off -> \(entry.profile.name) on \(target.interface) (\(entry.profile.summary))")
            state = .active(ActiveCondition(entry: entry, plan: plan, since: Date()))
        case .active(var condition):
            do {
                try engine.change(from: condition.plan, to: plan)
            } catch {
                guard try treeIsMissing(after: error) else { throw error }
                logger.warning("linkcond's tree on \(target.interface) was removed behind its back; rebuilding it")
                try engine.remove(target)
                try engine.apply(plan, replacingForeign: replacingForeign)
            }
            let previous = condition.entry.profile.name
            if condition.entry != entry {
                condition.since = Date()
            }
            condition.entry = entry
            condition.plan = plan
            state = .active(condition)
            logger.notice("condition: \(previous) -> \(entry.profile.name) on \(target.interface) (\(entry.profile.summary))")
        }
        return status()
    }

    /// Removes all shaping. Also cleans up after an earlier run when already off.
    public func deactivate() throws(ShapingError) -> StatusResponse {
        try engine.remove(target)
        if case .active(let condition) = state {
            logger.notice("condition: \(condition.entry.profile.name) -> off on \(target.interface)")
            state = .off(since: Date())
        }
        return status()
    }

    /// Removes a tree left by an earlier daemon that did not stop cleanly.
    public func removeLeftovers() throws(ShapingError) {
        let survey = try engine.survey(target)
        guard survey.hasLinkcondObjects else { return }
        logger.notice("removing linkcond objects left on \(target.interface) by an earlier run")
        try engine.remove(target)
    }

    /// Whether a failed switch failed because the tree to change is gone (deleted by hand, or
    /// the interface was recreated), which a rebuild can fix.
    private func treeIsMissing(after error: ShapingError) throws(ShapingError) -> Bool {
        guard error.netlink?.code == .notFound || error.netlink?.code == .noSuchDevice else { return false }
        return try !engine.survey(target).isCompleteTree
    }

    private func statusDocument(profile: ProfileDocument?, since: Date) -> StatusResponse {
        StatusResponse(
            interface: target.interface,
            ifb: target.ifb,
            active: profile != nil,
            profile: profile,
            since: since.formatted(.iso8601),
            exemptions: planner.exemptions.ports.map(\.description) + planner.exemptions.networks.map(\.description)
        )
    }
}
