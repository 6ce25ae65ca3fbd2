import ArgumentParser
import ControlAPI
import Glibc
import LinkCondClient

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch what each condition does, live: rates, drops, queues, leases.",
        discussion: """
            On a terminal, the screen is redrawn in place at each update, with each direction's \
            recent rates as a sparkline; Ctrl-C quits. Into a pipe or a file, one plain line per \
            condition and update. Reads GET /v1/conditions and GET /v1/stats: the daemon keeps \
            no timer for it, and its rates are over the time since the previous update.
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Seconds between updates.", valueName: "seconds")) var interval: Double = 1
    @Option(help: ArgumentHelp("Stop after this many updates (default: until interrupted).", valueName: "n")) var count: Int?

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else {
            throw ValidationError("--interval must be from 0.1 to 3600 seconds")
        }
        if let count, count < 1 {
            throw ValidationError("--count must be at least 1")
        }
    }

    func run() async throws {
        let client = connection.client
        let terminal = isatty(STDOUT_FILENO) == 1
        var view = WatchView()
        // The first read only starts the rates: it is not shown on a terminal.
        _ = try? await client.stats()
        var updates = 0
        while count.map({ updates < $0 }) ?? true {
            try await Task.sleep(for: .milliseconds(Int(interval * 1000)))
            let (conditions, stats) = try await withDaemon { () async throws(ControlClientError) in
                (try await client.conditions(), try await client.stats())
            }
            view.record(stats)
            if terminal {
                // Home, clear to the end, then the frame: no alternate screen, so the last
                // frame stays readable after Ctrl-C.
                print("\u{1B}[H\u{1B}[J" + view.frame(conditions, stats))
            } else {
                for line in view.plainLines(conditions, stats) { print(line) }
            }
            fflush(nil)
            updates += 1
        }
    }
}
