import ArgumentParser
import Foundation
import Glibc

/// Whole commands run side by side, as a CI script runs them: wall time from spawn to exit and
/// each run's peak resident memory, as GNU time reports it (`%M`). Through /usr/bin/time, which
/// forks: a child spawned straight from this process would share its memory until exec, and
/// report this process's peak as its own.
struct WholeCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whole-commands",
        abstract: "Time whole commands side by side, interleaved, and report their medians and peak memory."
    )

    struct Result: Codable {
        var command: String
        var runs: Int
        var failures: Int
        var medianMilliseconds: Double
        var p90Milliseconds: Double
        var peakRSSKiB: Int
        var medianPeakRSSKiB: Int
    }

    @Option(name: .customLong("command"), help: "A command, its words separated by spaces; repeat.") var commands: [String]
    @Option(help: "Runs of each command.") var runs = 21
    @Option(help: "Write the results here as JSON.") var out: String?

    func run() throws {
        var times = [[Double]](repeating: [], count: commands.count)
        var memory = [[Int]](repeating: [], count: commands.count)
        var failures = [Int](repeating: 0, count: commands.count)
        // Interleaved, so that whatever else the machine does weighs on every command alike;
        // a first round to warm the page cache is not counted.
        for round in 0...runs {
            for (index, command) in commands.enumerated() {
                let (milliseconds, peak, status) = try measure(command)
                guard round > 0 else { continue }
                times[index].append(milliseconds)
                memory[index].append(peak)
                if status != 0 { failures[index] += 1 }
            }
        }
        let results = commands.indices.map { index -> Result in
            let sorted = times[index].sorted()
            let rss = memory[index].sorted()
            return Result(
                command: commands[index], runs: runs, failures: failures[index],
                medianMilliseconds: sorted[sorted.count / 2], p90Milliseconds: sorted[min(sorted.count - 1, sorted.count * 9 / 10)],
                peakRSSKiB: rss.last ?? 0, medianPeakRSSKiB: rss[rss.count / 2]
            )
        }
        for result in results {
            print(String(format: "%@: median %.1f ms, p90 %.1f ms, peak RSS %.1f MB (median %.1f MB), %d failed",
                         result.command, result.medianMilliseconds, result.p90Milliseconds,
                         Double(result.peakRSSKiB) * 1.024 / 1000, Double(result.medianPeakRSSKiB) * 1.024 / 1000, result.failures))
        }
        if let out {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(results).write(to: URL(fileURLWithPath: out))
        }
    }

    /// One run: wall milliseconds, peak RSS in KiB, exit status. Output goes to /dev/null.
    private func measure(_ command: String) throws -> (Double, Int, Int32) {
        let report = "/tmp/lc-bench-time-\(getpid())"
        defer { unlink(report) }
        let words = ["/usr/bin/time", "-f", "%M", "-o", report] + command.split(separator: " ").map(String.init)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let start = monotonicNanoseconds()
        guard posix_spawn(&pid, words[0], &actions, nil, argv, environ) == 0 else {
            throw BenchError("cannot start /usr/bin/time (Debian package time)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let elapsed = Double(monotonicNanoseconds() - start) / 1e6
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        let peak = text.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        return (elapsed, peak, (status >> 8) & 0xFF)
    }
}
