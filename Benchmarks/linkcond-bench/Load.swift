import ArgumentParser
import ControlAPI
import LinkCondClient
import Foundation
import NIOHTTP1

/// Many clients at once, each on its own keep-alive connection: readers ask for status,
/// profiles and history, switchers change the condition. Counts every answer by status.
/// With `--connection-per-request`, each request connects anew, as every `linkcond` command
/// does: what a command waits for the daemon, without the time its process takes to start.
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run many concurrent clients against linkcondd and count their answers."
    )

    struct Result: Codable {
        var readers: Int
        var switchers: Int
        var requestsPerClient: Int
        var answersByStatus: [String: Int]
        /// Requests that got no answer at all (connection refused or broken).
        var failures: Int
        var failureMessages: [String]
        var seconds: Double
        var latency: LatencySummary
    }

    @Option(help: "linkcondd's control socket.") var socket: String
    @Option(help: "Clients that only read.") var readers = 40
    @Option(help: "Clients that switch profiles (the caller must be allowed to).") var switchers = 10
    @Option(help: "Requests each client sends.") var requests = 200
    @Option(name: .customLong("profile"), help: "Profiles the switchers choose from; repeat.") var profiles: [String] = []
    @Flag(help: "Connect anew for each request (waiting for room in a full backlog, as the client does), instead of one keep-alive connection per client.")
    var connectionPerRequest = false
    @Option(help: "Write the result here as JSON.") var out: String?

    func run() async throws {
        let client = ControlClient(socketPath: socket)
        let (requests, profiles, connectionPerRequest) = (self.requests, self.profiles, self.connectionPerRequest)
        let started = monotonicNanoseconds()
        let outcomes = await withTaskGroup(of: ClientOutcome.self) { group in
            for index in 0..<(readers + switchers) {
                let switching = index >= readers
                group.addTask {
                    var outcome = ClientOutcome()
                    do {
                        if connectionPerRequest {
                            for request in 0..<requests {
                                let start = monotonicNanoseconds()
                                let status = try await client.withConnection { connection in
                                    try await Self.send(request, switching: switching, profiles: profiles, on: connection)
                                }
                                outcome.record(status, since: start)
                            }
                        } else {
                            try await client.withConnection { connection in
                                for request in 0..<requests {
                                    let start = monotonicNanoseconds()
                                    let status = try await Self.send(request, switching: switching, profiles: profiles, on: connection)
                                    outcome.record(status, since: start)
                                }
                            }
                        }
                    } catch {
                        outcome.failures.append("\(error)")
                    }
                    return outcome
                }
            }
            var all: [ClientOutcome] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        var statuses: [String: Int] = [:]
        for outcome in outcomes { statuses.merge(outcome.statuses, uniquingKeysWith: +) }
        let failures = outcomes.flatMap(\.failures)
        let result = Result(
            readers: readers, switchers: switchers, requestsPerClient: requests, answersByStatus: statuses,
            failures: failures.count, failureMessages: Array(failures.prefix(5)),
            seconds: Double(monotonicNanoseconds() - started) / 1e9,
            latency: LatencySummary(method: "load", nanoseconds: outcomes.flatMap(\.latencies))
        )
        print("load: \(readers) readers + \(switchers) switchers x \(requests): answers \(statuses.sorted { $0.key < $1.key }), \(failures.count) clients failed, \(String(format: "%.1f", result.seconds)) s, p50 \(String(format: "%.2f", result.latency.p50Milliseconds)) ms, p99 \(String(format: "%.2f", result.latency.p99Milliseconds)) ms")
        if let out {
            var encodable = result
            encodable.latency.samplesMilliseconds = []
            try JSONEncoder().encode(encodable).write(to: URL(fileURLWithPath: out))
        }
    }

    private struct ClientOutcome: Sendable {
        var statuses: [String: Int] = [:]
        var latencies: [Int64] = []
        var failures: [String] = []

        mutating func record(_ status: Int, since start: Int64) {
            latencies.append(monotonicNanoseconds() - start)
            statuses[String(status), default: 0] += 1
        }
    }

    private static func send(_ number: Int, switching: Bool, profiles: [String], on connection: ControlConnection) async throws -> Int {
        let (method, path, body) = request(number: number, switching: switching, profiles: profiles)
        return try await connection.exchange(method, path, payload: body).0
    }

    private static func request(number: Int, switching: Bool, profiles: [String]) -> (HTTPMethod, String, Data?) {
        if switching, !profiles.isEmpty, number % 2 == 0 {
            let profile = profiles[(number / 2) % profiles.count]
            return (.PUT, APIPath.condition, try? JSONEncoder().encode(ActivateRequest(profile: profile)))
        }
        switch number % 3 {
        case 0: return (.GET, APIPath.status, nil)
        case 1: return (.GET, APIPath.profiles, nil)
        default: return (.GET, APIPath.history + "?limit=5", nil)
        }
    }
}
