import Conditions
import ControlHTTP
import ControlAPI
import Logging
import Sandboxes
import Shaping

/// `linkcondd --cleanup`: removes every linkcond tree a daemon may have left, without a daemon.
/// systemd runs it after the service stops, whatever way it stopped.
public enum Cleanup {
    /// Conditions worth checking: those on the interfaces named, and those the state files in
    /// `stateDirectory` mention, in other network namespaces too while those live (reached
    /// through another process or name once the condition's own PID or name is gone). The state files stay: a daemon restarted after a crash restores
    /// their leases.
    public static func run(
        interfaces named: [String], stateDirectory: String, kernel: any TrafficControlKernel, filter: (any PacketFilterKernel)? = nil,
        namespaces: (any NamespaceKernels)? = nil, sandboxes: (any SandboxPlumbing)? = nil, logger: Logger
    ) throws {
        var conditions = named.map { ConditionID(interface: $0) }
        for id in StateStore.storedConditions(in: stateDirectory) where !conditions.contains(id) {
            conditions.append(id)
        }
        let engine = ShapingEngine(kernel: kernel, filter: filter, logger: logger)
        var failures: [String] = []
        for id in conditions {
            var conditionEngine = engine
            if let namespace = id.namespace {
                let stored = StateStore(directory: stateDirectory, condition: id).load()?.namespaceIdentity
                guard let namespaces, let stored, let path = namespaces.path(of: stored, preferring: namespace.path) else { continue }
                conditionEngine = ShapingEngine(
                    kernel: namespaces.kernel(at: path, identity: stored), filter: namespaces.filter(at: path, identity: stored), logger: logger
                )
            }
            let target = ShapingTarget(interface: id.interface)
            do {
                try conditionEngine.install(nil, on: target)
                let survey = try conditionEngine.survey(target)
                guard survey.interface != nil, survey.hasLinkcondObjects else { continue }
                try conditionEngine.remove(target)
                logger.notice("cleanup: removed linkcond's tree from \(id)")
            } catch {
                failures.append("\(id): \(error)")
            }
        }
        // The failure tables of conditions no state file names any more.
        do {
            for table in try engine.failureTables() {
                try engine.removeFailureTable(table)
                logger.notice("cleanup: removed the nftables table inet \(table)")
            }
            engine.removeUnreachableRulesIfUnused()
        } catch {
            failures.append("\(error)")
        }
        // A sandbox does not outlive its daemon: its `run` lost its lease with it.
        if let sandboxes {
            for id in conditions {
                guard let index = StateStore(directory: stateDirectory, condition: id).load()?.sandbox,
                      index <= SandboxAddressing.maximumIndex
                else { continue }
                let problems = sandboxes.tearDown(SandboxAddressing(index: index))
                failures += problems.map { "sandbox \(index) of \(id): \($0)" }
                if problems.isEmpty { logger.notice("cleanup: removed sandbox \(index) of \(id)") }
            }
            failures += sandboxes.restoreForwarding()
        }
        if !failures.isEmpty {
            throw DaemonError(code: .netlink, message: "cleanup failed: " + failures.joined(separator: "; "))
        }
    }
}
