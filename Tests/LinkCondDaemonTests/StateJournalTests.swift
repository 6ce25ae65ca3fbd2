import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("The state file: base units, exact values, hostile contents")
struct StateJournalTests {
    /// The netlink attributes a profile becomes: what must be bit-identical after a restart.
    static func wire(_ profile: Profile) -> [String] {
        let plan = Planner().plan(profile, on: ShapingTarget(interface: "eth0"))
        return [plan.uplink, plan.downlink].flatMap { tree in
            tree.classes.map { "\($0.classID) \($0.encoded)" } + tree.leaves.map { "\($0.handle) \($0.settings.encoded)" }
        }
    }

    static let shipped: [ProfileEntry] = {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../profiles").standardized
        return ProfileCatalog.load(from: [directory.path]).entries
    }()

    static let extremes: [Profile] = [
        Profile(
            name: "odd values",
            downlink: LinkConditions(bandwidth: try! Bandwidth(parsing: "1.2345Mbit"), delay: try! Delay(parsing: "12.345ms"), jitter: try! Delay(parsing: "0.5ms"), loss: try! LossRate(parsing: "0.0004%")),
            uplink: LinkConditions(bandwidth: .init(bitsPerSecond: 8), delay: Delay.maximum, jitter: Delay.maximum, loss: try! LossRate(parsing: "0.0000000001%")),
            dnsDelay: try! Delay(parsing: "1us")
        ),
        Profile(
            name: "edges",
            downlink: LinkConditions(bandwidth: Bandwidth.maximum, loss: .total),
            uplink: LinkConditions(bandwidth: .init(bitsPerSecond: 99_999_999_999), loss: try! LossRate(parsing: "99.9999999999%")),
            dnsDelay: Delay.maximum
        ),
        Profile(name: "names fail", failure: .refuse, dnsFailure: DNSFailure(kind: .servfail, names: ["api.example.com", "*.cdn.example.com"])),
        Profile(name: "every name times out", dnsFailure: DNSFailure(kind: .timeout)),
    ]

    @Test("Every shipped profile and extreme values come back with bit-identical netlink attributes")
    func roundTrip() throws {
        #expect(Self.shipped.count == 33)
        let entries = Self.shipped + Self.extremes.map { ProfileEntry(profile: $0, file: "/x/\($0.name).yaml", stem: $0.name) }
        for entry in entries {
            let state = PersistedState(interface: "eth0", baseline: .init(entry), baselineSince: Date(), lease: nil)
            let decoded = try #require(StateStore.decode(try StateStore.encode(state)), "\(entry.profile.name)")
            let back = try #require(try decoded.baseline?.entry())
            #expect(back == entry, "\(entry.profile.name)")
            #expect(Self.wire(back.profile) == Self.wire(entry.profile), "\(entry.profile.name)")
        }
    }

    @Test("The values on disk are base units, not display text")
    func baseUnits() throws {
        let entry = ProfileEntry(profile: Self.extremes[0], file: "/x/odd.yaml", stem: "odd")
        let text = String(decoding: try StateStore.encode(PersistedState(interface: "eth0", baseline: .init(entry), baselineSince: Date())), as: UTF8.self)
        #expect(text.contains("\"bandwidthBitsPerSecond\" : 1234500"))
        #expect(text.contains("\"lossScaledPercent\" : 4000000"))
        #expect(text.contains("\"delayMicroseconds\" : 12345"))
        #expect(!text.contains("Mbit"))
    }

    @Test("A restarted daemon applies exactly the values the first one had", arguments: [0, 1])
    func restartIsBitIdentical(index: Int) async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let entry = ProfileEntry(profile: Self.extremes[index], file: "/x/odd.yaml", stem: "odd")
        let kernel = FakeKernel(interfaces: ["eth0"])
        let catalog = ProfileCatalog(entries: TestDaemon.profiles + [entry])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path, catalog: catalog).activate("odd", by: TestDaemon.root)
        let before = kernel.fullState
        // The new daemon no longer has the profile at all: the state file alone carries it.
        let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(kernel.fullState == before)
        #expect(try TestDaemon.conditionInKernel(kernel, candidates: [entry]) == entry.profile.name)
    }

    @Test("Garbage and out-of-range values are refused without trapping", arguments: [
        "", "{", "null", "[]", #"{"version": 2}"#, #"{"version": 1, "interface": "eth0", "baselineSince": "2026-01-01T00:00:00Z"}"#,
    ])
    func garbage(text: String) {
        #expect(StateStore.decode(Data(text.utf8)) == nil)
    }

    @Test("A stored value out of range is an error naming its field", arguments: [
        ("lossScaledPercent", "1000000000001", "downlink.loss"),
        ("bandwidthBitsPerSecond", "7", "downlink.bandwidth"),
        ("delayMicroseconds", "60000001", "downlink.delay"),
        ("jitterMicroseconds", "18446744073709551615", "downlink.jitter"),
    ])
    func outOfRange(field: String, value: String, named: String) throws {
        let entry = ProfileEntry(profile: Profile(name: "x", downlink: LinkConditions(bandwidth: .kbit(1))), file: "/x.yaml", stem: "x")
        var text = String(decoding: try StateStore.encode(PersistedState(interface: "eth0", baseline: .init(entry), baselineSince: Date())), as: UTF8.self)
        let pattern = try Regex("\"downlink\" : \\{[^}]*\"\(field)\" : [0-9]+")
        let match = try #require(text.firstMatch(of: pattern))
        let replaced = String(text[match.range]).replacing(try Regex("\"\(field)\" : [0-9]+"), with: "\"\(field)\" : \(value)")
        text.replaceSubrange(match.range, with: replaced)
        let state = try #require(StateStore.decode(Data(text.utf8)))
        #expect(throws: StoredProfileError.self) { try state.baseline?.entry() }
        #expect((try? state.baseline?.entry()) == nil)
        do { _ = try state.baseline?.entry() } catch { #expect(error.description.contains(named)) }
    }
}

@Suite("Recovery checks the whole tree, filters included")
struct WholeTreeRecoveryTests {
    @Test("An ingress without one of its redirect filters is rebuilt, not re-adopted", arguments: ReservedHandles.IngressPriority.redirects.map(\.priority))
    func halfFilteredIngress(priority: UInt16) async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path).activate("Slow Net", by: TestDaemon.root)
        kernel.removeFilters(on: "eth0", parent: .ingress, priority: priority)
        #expect(throws: (any Error).self) { try TestDaemon.conditionInKernel(kernel) }
        let stepsBefore = kernel.executed.count
        let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
        #expect(kernel.executed[stepsBefore...].contains { if case .createIFB = $0 { return true }; return false }, "rebuilt")
        let history = await restarted.history(limit: 1)
        #expect(history.last?.detail?.contains("rebuilt") == true)
    }

    @Test("An uplink missing a classification filter is rebuilt")
    func missingUplinkFilter() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path).activate("Slow Net", by: TestDaemon.root)
        kernel.removeFilters(on: "eth0", parent: ReservedHandles.root, priority: ReservedHandles.Priority.all)
        let restarted = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await restarted.recover()
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
    }

    @Test("A half-filtered ingress with nothing wanted is removed")
    func halfFilteredIngressRemoved() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        _ = try await TestDaemon.conditioner(kernel: kernel).activate("Slow Net", by: TestDaemon.root)
        kernel.removeFilters(on: "eth0", parent: .ingress, priority: ReservedHandles.IngressPriority.ipv6)
        try await TestDaemon.conditioner(kernel: kernel).recover()
        #expect(kernel.fullState == pristine)
    }
}

@Suite("Requests from hostile bytes")
struct ControlRequestTests {
    @Test("Query strings never trap, and malformed ones are refused", arguments: [
        ("/v1/status?=", nil), ("/v1/status?=x", nil), ("/v1/status?&&", [:]), ("/v1/status?a=1&a=2", nil),
        ("/v1/status?%zz", nil), ("/v1/status?a=%", nil), ("/v1/status?a==b", ["a": "=b"]), ("/v1/status?force", ["force": ""]),
        ("/v1/status?a+b=c+d", ["a b": "c d"]), ("?", [:]), ("", [:]), ("/v1/status#?x", [:]),
    ] as [(String, [String: String]?)])
    func query(uri: String, expected: [String: String]?) {
        let request = ControlRequest(method: .GET, uri: uri, body: [], requester: TestDaemon.root)
        #expect(request.query == expected)
    }

    @Test("The crash a local user found is a 400 now")
    func emptyQueryName() async throws {
        let router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"])), authorizer: TestDaemon.authorizer)
        let reply = await router.respond(to: ControlRequest(method: .GET, uri: "/v1/status?=", body: [], requester: TestDaemon.bob))
        #expect(reply.status == .badRequest)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("malformed query string"))
    }

    @Test("Bad query values are 400s", arguments: ["/v1/history?limit=-1", "/v1/history?limit=1000000", "/v1/history?limit=x"])
    func badLimit(uri: String) throws {
        #expect(throws: ControlError.self) { try APICall.parse(ControlRequest(method: .GET, uri: uri, body: [], requester: TestDaemon.root)) }
    }

    @Test("Text from the request is shown escaped and cut short")
    func printable() {
        #expect(APICall.printable("a\u{1B}[31mb\nc") == "a\\u{1B}[31mb\\nc")
        #expect(APICall.printable(String(repeating: "x", count: 500)).count == 123)
    }
}
