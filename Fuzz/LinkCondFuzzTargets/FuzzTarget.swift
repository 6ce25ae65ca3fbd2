#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Console
import ControlAPI
import Dispatch
import Conditions
import Failures
import ControlHTTP
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Netlink
import Pcapng
import Profiles

/// Everything that parses bytes a local user or a file controls, as a function of those bytes:
/// run by libFuzzer (`scripts/fuzz`), and over the seed corpus by the unit tests. Each must
/// return for every input without trapping; a thrown parse error is the expected outcome.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Raw bytes on a control connection: NIO's HTTP decoder with the daemon's limits and
    /// `ConnectionGuard`, then the URI, query and body of every request it yields.
    case request
    /// A request's JSON body, decoded strictly, and its lease duration.
    case json
    /// A profile file.
    case profile
    /// A scenario file, and the schedule it plays.
    case scenario
    /// The state file a restarted daemon reads.
    case state
    /// The history file a starting daemon reads, and each record as `GET /v1/history` shows it.
    case history
    /// A packet netfilter queued for the DNS responder, from the network: its IP and UDP headers,
    /// the DNS query in it, and the answer that would fail it.
    case dns
    /// A packet trace (`linkcond run --capture` reads the one it was streamed), cut or not.
    case pcapng
    /// Raw bytes from a browser (or anyone on the network) on the console's listener: NIO's
    /// HTTP decoder and aggregator with the console's limits, then every route, as an operator
    /// and not, from a device behind the gateway and from elsewhere.
    case console

    public func run(_ bytes: [UInt8]) {
        switch self {
        case .request: Self.request(bytes)
        case .json: Self.json(bytes)
        case .profile: Self.profile(bytes)
        case .scenario: Self.scenario(bytes)
        case .state: Self.state(bytes)
        case .history: Self.history(bytes)
        case .dns: Self.dns(bytes)
        case .pcapng: Self.pcapng(bytes)
        case .console: Self.console(bytes)
        }
    }

    /// The corpus directory of this target, next to this file in the source tree.
    public var corpus: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Corpus").appendingPathComponent(rawValue).path
    }

    static let requester = Requester(uid: 1000, gid: 1000, pid: 1, user: "fuzz", command: "fuzz")

    private static func dns(_ bytes: [UInt8]) {
        // The bytes as a conntrack listing, which a device's handover reads.
        if let (tuples, _) = try? NetfilterSocket.connectionTuples(inMessages: bytes[...], "fuzz") {
            precondition(tuples.allSatisfy { $0.source.count == 4 || $0.source.count == 16 }, "a source that is no address")
        }
        // The bytes as the kernel's drop monitor's alerts (family 0x1d, as a seed has it), and as its family's description.
        for alert in DropMonitorSocket.alerts(inMessages: bytes[...], family: 0x1D) {
            precondition(alert.length >= UInt32(alert.payload.count), "an alert shorter than its payload")
        }
        _ = try? DropMonitorSocket.familyAndGroup(inReply: bytes[...], "fuzz")
        // The bytes as a whole packet, and as a query alone.
        let datagram = QueuedDatagram(packet: bytes[...])
        let payload = datagram?.payload ?? bytes[...]
        guard let query = DNSQuery(parsing: payload) else { return }
        let answer = query.answer(code: 3)
        precondition(answer.count <= payload.count, "an answer longer than its query")
        // The answer built whole for a raw socket reads back as a datagram the other way.
        if let datagram, let packet = AnswerDatagram(answering: datagram, payload: answer) {
            let read = QueuedDatagram(packet: packet.bytes[...])
            precondition(read?.source == datagram.destination && read?.destinationPort == datagram.sourcePort, "an answer that does not go back")
        }
        _ = DNSFailure(kind: .nxdomain, names: ["*.example.com"]).covers(query.name)
    }

    private static func pcapng(_ bytes: [UInt8]) {
        for cut in [false, true] {
            guard let trace = try? PcapngReader(bytes, allowingTruncatedEnd: cut) else { continue }
            let held = trace.packets.reduce(0) { $0 + $1.data.count }
            precondition(held <= bytes.count, "packets holding more bytes than the trace")
            precondition(trace.packets.allSatisfy { $0.interface < trace.interfaces.count }, "a packet of no interface")
            let summary = TraceSummary(trace)
            precondition(summary.peers.count <= TraceSummary.mostPeers + 1, "more peers than the summary keeps")
        }
    }

    private static func console(_ bytes: [UInt8]) {
        let channel = EmbeddedChannel()
        let collector = FullRequestCollector()
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(NIOHTTPServerRequestAggregator(maxContentLength: ConsoleServer.Limits().maximumBody))
            try channel.pipeline.syncOperations.addHandler(collector)
        } catch {
            return
        }
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        for piece in [bytes[..<split], bytes[split...]] where channel.isActive {
            _ = try? channel.writeInbound(ByteBuffer(bytes: piece))
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        guard !collector.requests.isEmpty else { return }
        let requests = collector.requests
        let done = DispatchSemaphore(value: 0)
        Task {
            for (index, full) in requests.prefix(8).enumerated() {
                let peer = ["192.168.50.11", "10.0.0.9", "::ffff:192.168.50.12"][index % 3]
                let request = ConsoleRequest(
                    method: full.head.method, uri: full.head.uri, headers: full.head.headers,
                    body: full.body.map { Array($0.readableBytesView) } ?? [], peer: peer
                )
                let response = await consoleApp.respond(to: request)
                precondition(response.headers["Content-Security-Policy"].count == 1, "an answer without its Content-Security-Policy")
            }
            done.signal()
        }
        done.wait()
    }

    /// A gateway's console over a daemon in memory, an operator's token issued (a fuzzed
    /// request can sign in only by guessing it).
    nonisolated(unsafe) static let consoleApp = ConsoleApp(
        backend: RecordingBackend(conditions: ["eth0", "lan0@device=192.168.50.11"]), access: OperatorAccess(),
        devices: DeviceScope(interface: "lo"), log: { _ in }
    )

    private static func request(_ bytes: [UInt8]) {
        let channel = EmbeddedChannel()
        let collector = RequestCollector()
        do {
            try channel.pipeline.syncOperations.addHandlers(ControlServer.httpHandlers(limits: .standard) + [collector])
            try channel.connect(to: SocketAddress(unixDomainSocketPath: "/fuzz")).wait()
        } catch {
            return
        }
        // Two pieces, split where the first byte says: partial reads are where parsers slip.
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        for piece in [bytes[..<split], bytes[split...]] where channel.isActive {
            _ = try? channel.writeInbound(ByteBuffer(bytes: piece))
        }
        for request in collector.requests {
            let parsed = ControlRequest(method: request.head.method, uri: request.head.uri, body: request.body, requester: requester)
            _ = try? APICall.parse(parsed, faultInjection: true)
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    private static func json(_ bytes: [UInt8]) {
        if let activation = try? APICall.decode(ActivateRequest.self, from: bytes) {
            _ = try? LeaseDuration.parse(activation.for)
        }
        if let lease = try? APICall.decode(LeaseRequest.self, from: bytes) {
            _ = try? LeaseDuration.parse(lease.for)
        }
        _ = try? APICall.decode(FaultRequest.self, from: bytes)
    }

    private static func profile(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let profile = try? ProfileParser.parse(yaml: text, file: "fuzz.yaml") {
            // What a parsed profile becomes must not trap either.
            _ = profile.summary
            _ = try? Bandwidth(parsing: profile.uplink.bandwidth?.description ?? "1kbit")
        }
    }

    private static func scenario(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let scenario = try? ScenarioParser.parse(yaml: text, file: "fuzz.yaml") else { return }
        // Its steps as they would play: durations drawn, repeats and loops followed.
        var schedule = ScenarioSchedule(scenario, seed: UInt64(bytes.count))
        for _ in 0..<200 {
            guard let play = schedule.next() else { break }
            let step = scenario.steps[play.index]
            _ = step.displayName
            _ = step.duration?.description
            _ = step.trigger?.description
        }
    }

    private static func state(_ bytes: [UInt8]) {
        guard let state = StateStore.decode(Data(bytes)) else { return }
        _ = try? state.baseline?.entry()
        _ = try? state.lease?.profile.entry()
    }

    /// Read as a whole file, and as the tail of a longer one (from inside a line).
    private static func history(_ bytes: [UInt8]) {
        for fromMiddle in [false, true] {
            _ = ConditionHistory.parse(bytes, fromMiddle: fromMiddle).records.map(HistoryEntryDocument.init)
        }
    }
}

/// Collects whole requests at the end of the pipeline, as the server's read loop would.
private final class RequestCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart

    struct Request {
        var head: HTTPRequestHead
        var body: [UInt8]
    }

    private(set) var requests: [Request] = []
    private var current: Request?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            current = Request(head: head, body: [])
        case .body(let buffer):
            if current?.body.count ?? 0 < 4096 {
                current?.body.append(contentsOf: buffer.readableBytesView)
            }
        case .end:
            if let current { requests.append(current) }
            current = nil
        }
    }
}

/// Whole requests as the console's aggregator hands them on.
private final class FullRequestCollector: ChannelInboundHandler {
    typealias InboundIn = NIOHTTPServerRequestFull
    var requests: [NIOHTTPServerRequestFull] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requests.count < 64 { requests.append(unwrapInboundIn(data)) }
    }
}
