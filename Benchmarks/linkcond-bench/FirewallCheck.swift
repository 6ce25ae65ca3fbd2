import ArgumentParser
import Sandboxes

/// What the firewall check adds to each sandbox's creation: reading the host's nftables chains
/// (and the text of a table whose forward chain drops) through libnftables. Needs root; changes
/// nothing.
struct FirewallCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firewall-check",
        abstract: "Time the check of the host's forward chains that runs once per sandbox, as the daemon runs it."
    )

    @Option(help: "How many checks to time.") var count = 200

    func run() throws {
        let plumbing = KernelSandboxPlumbing(uplinks: { [] }, ledger: nil)
        var found: [ForwardDropChain] = []
        var samples: [Int64] = []
        for _ in 0..<count {
            let start = monotonicNanoseconds()
            found = plumbing.forwardDropChains()
            samples.append(monotonicNanoseconds() - start)
        }
        let summary = LatencySummary(method: "forward chains check", nanoseconds: samples)
        print(String(
            format: "%d checks: p50 %.3f ms, p99 %.3f ms, max %.3f ms; chains in the way: %d",
            summary.count, summary.p50Milliseconds, summary.p99Milliseconds, summary.maxMilliseconds, found.count
        ))
        for chain in found {
            print("  \(chain.family) \(chain.table) \(chain.chain)\(chain.hasDockerUserChain ? " (Docker's)" : "")")
        }
    }
}
