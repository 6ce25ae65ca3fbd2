import ArgumentParser

/// Measurements behind docs/performance.md. `Benchmarks/run.sh` drives it inside the test VM;
/// `native` runs on the host.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcond-bench",
        abstract: "Benchmarks for linkcond: switch latency, hitless switching, native cost, tc scripts, load and connection floods.",
        subcommands: [SwitchLatency.self, SwitchCommand.self, Hitless.self, TCScripts.self, Native.self, PeerScale.self, MetricsScale.self, Startup.self, Load.self, Flood.self, WholeCommands.self, FirewallCheck.self]
    )
}
