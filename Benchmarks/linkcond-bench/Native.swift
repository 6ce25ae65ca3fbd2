import ArgumentParser
import LinkCondClient
import Foundation
import Netlink
import Profiles
import Shaping

/// What a switch costs on this machine's own kernel, whose missing netem keeps the real thing
/// in the VM: the daemon's user-space path over a real socket (against the model kernel), and one
/// netlink change of an htb class, which this kernel does have.
struct Native: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the user-space path of a switch and the cost of one netlink change, natively. Run as root in a throwaway network namespace."
    )

    struct Report: Codable {
        var userspace: LatencySummary
        var netlinkChange: LatencySummary
        var stepsPerSwitch: Double
        /// User-space p50 plus the steps of an average switch at the netlink p50 (p99 alike).
        var estimatedSwitchP50Milliseconds: Double
        var estimatedSwitchP99Milliseconds: Double
    }

    @Option(help: "Directory of profile files to cycle through.") var profiles: String
    @Option(help: "Number of switches and netlink changes.") var count = 2000
    @Option(help: "Write the report here as JSON.") var out: String?

    func run() async throws {
        // Shaping profiles alone: a failure's nftables rules are not the model kernel's, nor a
        // switch's netlink changes.
        let shaping = ProfileCatalog.load(from: [profiles]).sortedEntries.filter { $0.profile.failure == nil && $0.profile.dnsFailure == nil }
        let names = shaping.map(\.profile.name)
        let userspace = try await measureUserspace(profileDirectory: profiles, names: names)
        let netlink = try measureNetlinkChange()

        let planner = Planner()
        let target = ShapingTarget(interface: "eth0")
        let plans = shaping.map { planner.plan($0.profile, on: target) }
        let steps = plans.indices.map { index in
            Double(plans[(index + plans.count - 1) % plans.count].changeSteps(to: plans[index])?.count ?? 0)
        }
        let stepsPerSwitch = steps.reduce(0, +) / Double(steps.count)
        let report = Report(
            userspace: userspace, netlinkChange: netlink, stepsPerSwitch: stepsPerSwitch,
            estimatedSwitchP50Milliseconds: userspace.p50Milliseconds + stepsPerSwitch * netlink.p50Milliseconds,
            estimatedSwitchP99Milliseconds: userspace.p99Milliseconds + stepsPerSwitch * netlink.p99Milliseconds
        )
        print(userspace.line)
        print(netlink.line)
        print(String(format: "native switch estimate: p50 %.3f ms, p99 %.3f ms (%.1f netlink changes per switch)",
                     report.estimatedSwitchP50Milliseconds, report.estimatedSwitchP99Milliseconds, stepsPerSwitch))
        if let out {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: out))
        }
    }

    /// The real daemon and the real control socket, with the model kernel in place of netlink.
    private func measureUserspace(profileDirectory: String, names: [String]) async throws -> LatencySummary {
        let count = self.count
        let samples = try await withModelDaemon(profileDirectory: profileDirectory) { client in
            try await client.withConnection { connection in
                var samples: [Int64] = []
                for index in 0..<count {
                    let start = monotonicNanoseconds()
                    try await connection.activate(names[index % names.count])
                    samples.append(monotonicNanoseconds() - start)
                }
                return samples
            }
        }
        return LatencySummary(method: "user space (daemon, HTTP, planning; model kernel)", nanoseconds: samples)
    }

    /// One in-place htb class change on `lo`, the kind of request a switch is made of, including
    /// the interface lookup linkcond does before each step.
    private func measureNetlinkChange() throws -> LatencySummary {
        let socket = try NetlinkSocket()
        guard let loopback = try socket.link(named: "lo") else { throw BenchError("no lo") }
        let root = TrafficControlHandle(major: 0x7A00)
        let classID = TrafficControlHandle(major: 0x7A00, minor: 3)
        try? socket.deleteQdisc(interfaceIndex: loopback.index, parent: .root, handle: root)
        try socket.addQdisc(interfaceIndex: loopback.index, parent: .root, handle: root, options: .htb(HTBQdiscOptions(defaultClass: 2)))
        defer { try? socket.deleteQdisc(interfaceIndex: loopback.index, parent: .root, handle: root) }
        func options(_ bitsPerSecond: UInt64) -> HTBClassOptions {
            HTBClassOptions(rateBytesPerSecond: bitsPerSecond / 8, ceilBytesPerSecond: bitsPerSecond / 8, burstBytes: 1600, ceilBurstBytes: 1600, quantumBytes: 1514)
        }
        try socket.addHTBClass(interfaceIndex: loopback.index, parent: root, classID: classID, options: options(32_000))
        var samples: [Int64] = []
        for index in 0..<count {
            let start = monotonicNanoseconds()
            guard let link = try socket.link(named: "lo") else { throw BenchError("lo vanished") }
            try socket.changeHTBClass(interfaceIndex: link.index, parent: root, classID: classID, options: options(index % 2 == 0 ? 2_000_000 : 32_000))
            samples.append(monotonicNanoseconds() - start)
        }
        return LatencySummary(method: "netlink: look up link + change htb class", nanoseconds: samples)
    }
}
