#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Shaping

/// `linkcondd --cleanup`: removes every linkcond tree a daemon may have left, without a daemon.
/// systemd runs it after the service stops, whatever way it stopped.
public enum Cleanup {
    /// Interfaces worth checking: those named, and those the state files in `stateDirectory`
    /// mention. The state files stay: a daemon restarted after a crash restores their leases.
    public static func run(interfaces named: [String], stateDirectory: String, kernel: any TrafficControlKernel, logger: Logger) throws {
        var interfaces = named
        let files = (try? FileManager.default.contentsOfDirectory(atPath: stateDirectory)) ?? []
        for file in files where file.hasSuffix(".state.json") {
            let interface = String(file.dropLast(".state.json".count))
            if !interfaces.contains(interface) { interfaces.append(interface) }
        }
        let engine = ShapingEngine(kernel: kernel, logger: logger)
        var failures: [String] = []
        for interface in interfaces {
            let target = ShapingTarget(interface: interface)
            do {
                let survey = try engine.survey(target)
                guard survey.interface != nil, survey.hasLinkcondObjects else { continue }
                try engine.remove(target)
                logger.notice("cleanup: removed linkcond's tree from \(interface)")
            } catch {
                failures.append("\(interface): \(error)")
            }
        }
        if !failures.isEmpty {
            throw DaemonError(code: .netlink, message: "cleanup failed: " + failures.joined(separator: "; "))
        }
    }
}
