import ArgumentParser
import ControlAPI
import Foundation
import LinkCondClient

/// What a scrape costs the daemon while it holds many conditions: `GET /metrics` and
/// `GET /v1/stats` with 1, 16 and 64 peers' conditions on one interface beside the whole
/// interface's. Natively over the model kernel (user space's share), or with `--socket` against
/// a running linkcondd, whose real kernel's dump of the tree comes on top.
struct MetricsScale: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics-scale",
        abstract: "Time GET /metrics and GET /v1/stats while 1, 16 and 64 peers' conditions are held (the model kernel, or a running daemon)."
    )

    struct Row: Codable {
        var conditions: Int
        var metrics: LatencySummary
        var stats: LatencySummary
        var metricsBytes: Int
    }

    @Option(help: "Directory of profile files (Slow Net is held), for the in-process daemon over the model kernel.") var profiles: String?
    @Option(help: "A running linkcondd's control socket instead (its default condition and peers' conditions are made, then removed).") var socket: String?
    @Option(help: "Requests of each kind at each size.") var count = 500
    @Option(help: "Write the rows here as JSON.") var out: String?

    static let sizes = [1, 16, 64]

    func run() async throws {
        let count = self.count
        let measure: @Sendable (ControlClient) async throws -> [Row] = { client in
            _ = try await client.activate("Slow Net")
            var rows: [Row] = []
            var held = 0
            for size in Self.sizes {
                while held < size {
                    _ = try await client.activate("Slow Net", condition: PeerScale.peer(held))
                    held += 1
                }
                let (metrics, stats, bytes) = try await client.withConnection { connection in
                    var metrics: [Int64] = []
                    var stats: [Int64] = []
                    var bytes = 0
                    for _ in 0..<count {
                        var start = monotonicNanoseconds()
                        let (status, body) = try await connection.exchange(.GET, APIPath.metrics, payload: nil)
                        metrics.append(monotonicNanoseconds() - start)
                        guard status == 200 else { throw BenchError("GET /metrics answered \(status)") }
                        bytes = body.count
                        start = monotonicNanoseconds()
                        _ = try await connection.exchange(.GET, APIPath.stats, payload: nil)
                        stats.append(monotonicNanoseconds() - start)
                    }
                    return (metrics, stats, bytes)
                }
                let row = Row(
                    conditions: size + 1,
                    metrics: LatencySummary(method: "GET /metrics, \(size + 1) conditions", nanoseconds: metrics),
                    stats: LatencySummary(method: "GET /v1/stats, \(size + 1) conditions", nanoseconds: stats),
                    metricsBytes: bytes
                )
                print(row.metrics.line.replacingOccurrences(of: "switches", with: "requests") + ", \(bytes) bytes")
                print(row.stats.line.replacingOccurrences(of: "switches", with: "requests"))
                rows.append(row)
            }
            return rows
        }
        let rows: [Row]
        switch (profiles, socket) {
        case (let profiles?, nil):
            rows = try await withModelDaemon(profileDirectory: profiles, measure)
        case (nil, let socket?):
            let client = ControlClient(socketPath: socket)
            rows = try await measure(client)
            _ = try await client.deactivateAll()
        default:
            throw ValidationError("give either --profiles (the model kernel) or --socket (a running daemon)")
        }
        try writeRows(rows, to: out)
    }
}
