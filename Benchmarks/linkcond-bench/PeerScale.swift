import ArgumentParser
import LinkCondClient
import Foundation

/// The daemon's own cost of switching one peer's condition while others are held on the same
/// interface, natively: the real daemon and socket over the model kernel, so that what grows
/// with the number of peers is user space's, not the kernel's.
struct PeerScale: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peer-scale",
        abstract: "Time switching one peer's condition while 1, 16, 64 and 256 peers of one interface are held (user space, model kernel)."
    )

    struct Row: Codable {
        var peers: Int
        var switchLatency: LatencySummary
    }

    @Option(help: "Directory of profile files (Slow Net and Nasty Net are switched).") var profiles: String
    @Option(help: "Switches at each size.") var count = 500
    @Option(help: "Write the rows here as JSON.") var out: String?

    static let sizes = [1, 16, 64, 256]

    /// Peer k: 10.200.(k / 256).(k % 256), on the daemon's interface.
    static func peer(_ index: Int) -> String { "@10.200.\(index / 256).\(index % 256)" }

    func run() async throws {
        let count = self.count
        let rows = try await withModelDaemon(profileDirectory: profiles) { client in
            var rows: [Row] = []
            var held = 0
            for size in Self.sizes {
                while held < size {
                    _ = try await client.activate("Slow Net", condition: Self.peer(held))
                    held += 1
                }
                let samples = try await client.withConnection { connection in
                    var samples: [Int64] = []
                    for index in 0..<count {
                        let start = monotonicNanoseconds()
                        try await connection.activate(index % 2 == 0 ? "Nasty Net" : "Slow Net", condition: Self.peer(0))
                        samples.append(monotonicNanoseconds() - start)
                    }
                    return samples
                }
                let row = Row(peers: size, switchLatency: LatencySummary(method: "one peer's switch beside \(size - 1) others", nanoseconds: samples))
                print(row.switchLatency.line)
                rows.append(row)
            }
            return rows
        }
        try writeRows(rows, to: out)
    }
}
