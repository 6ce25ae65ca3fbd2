import Capture
import Conditions
import ControlAPI
@testable import ControlHTTP
import NIOHTTP1
import ShapingTestSupport
import Synchronization
import Testing

/// Captures as the daemon grants them, without the kernel: who may capture, which packets, the
/// notes a capture hears as its condition changes, and the history. The packets themselves are
/// the kernel suite's (test_packet_traces.py).
@Suite("Packet captures of a condition")
struct CaptureTests {
    @Test("A capture's limits out of range, or unknown, are a 400", arguments: [
        "count=0", "count=1000000001", "count=x", "snaplen=63", "snaplen=262145", "for=0s", "for=25h", "for=soon", "every=1",
        "dropped=all", "dropped=",
    ])
    func badOptions(query: String) {
        let request = ControlRequest(method: .GET, uri: "/v1/condition/capture?\(query)", body: [], requester: TestDaemon.root)
        #expect(throws: ControlError.self) { try APICall.parse(request) }
    }

    @Test("dropped=keep asks for the dropped packets too; dropped=count is the default")
    func keepDropped() throws {
        let keep = ControlRequest(method: .GET, uri: "/v1/conditions/eth0/capture?dropped=keep&for=5s", body: [], requester: TestDaemon.root)
        #expect(try APICall.parse(keep) == .capture(ConditionID(interface: "eth0"), CaptureOptions(duration: LeaseDuration(milliseconds: 5_000), keepDropped: true)))
        let count = ControlRequest(method: .GET, uri: "/v1/condition/capture?dropped=count", body: [], requester: TestDaemon.root)
        #expect(try APICall.parse(count) == .capture(nil, CaptureOptions()))
    }

    @Test("Only GET captures")
    func method() {
        let request = ControlRequest(method: .POST, uri: "/v1/conditions/eth0/capture", body: [], requester: TestDaemon.root)
        #expect(throws: ControlError.self) { try APICall.parse(request) }
    }

    @Test("A user outside the group may not capture: 403, saying a trace holds other people's packets")
    func forbidden() async {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]))
        let router = ControlRouter(conditioner: conditioner, authorizer: TestDaemon.authorizer)
        let reply = await router.respond(to: ControlRequest(method: .GET, uri: "/v1/condition/capture", body: [], requester: TestDaemon.bob))
        #expect(reply.status == .forbidden)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("other people's packets"))
        #expect(await conditioner.history(limit: 10).isEmpty)
    }

    @Test("A peer's capture takes its networks and port; a change of the condition is told to its capture alone; both ends are in the history")
    func grantAndNotes() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0", "eth1"]))
        let peer = ConditionID(interface: "eth0", peer: try PeerSpec(parsing: "192.0.2.7:443/tcp"))
        let heard = Heard()
        let grant = try await conditioner.beginCapture(on: peer, by: TestDaemon.alice) { heard.add($0, ifb: $1) }
        #expect(grant.interface == "eth0" && grant.networks == ["192.0.2.7/32"] && grant.port == 443 && grant.transports == ["tcp"])
        #expect(grant.ifb == nil && !grant.facesTheApp)
        #expect(grant.firstNote == "linkcond: off (in force as the capture began)")
        let filter = CaptureFilter(networks: grant.networks, port: grant.port, transports: grant.transports)
        #expect(filter.expression == "(net 192.0.2.7/32) and (tcp port 443)")

        _ = try await conditioner.activate("Slow Net", on: peer, by: TestDaemon.alice)
        _ = try await conditioner.activate("Slow Net", on: ConditionID(interface: "eth1"), by: TestDaemon.alice)
        let notes = heard.all
        #expect(notes.count == 1)
        #expect(notes.first?.hasPrefix("linkcond: Slow Net (activate): down: ") == true)
        // The tree the profile made: the capture reads the downlink from its IFB from now on.
        #expect(heard.downlinks == ["lc-eth0"])

        let second = try await conditioner.beginCapture(on: peer, by: TestDaemon.alice) { _, _ in }
        #expect(second.ifb == "lc-eth0" && second.serial == grant.serial + 1)
        #expect(second.firstNote.hasPrefix("linkcond: Slow Net (in force as the capture began): down: "))
        await conditioner.endCapture(grant, by: TestDaemon.alice, detail: "3 packets written")
        await conditioner.endCapture(second, by: TestDaemon.alice, detail: "0 packets written")
        _ = try await conditioner.deactivate(on: peer, by: TestDaemon.alice)
        #expect(heard.all.count == 1)
        let captures = await conditioner.history(limit: 20).filter { $0.reason == "capture" }.map(\.detail)
        #expect(captures == ["capture 1 began", "capture 2 began", "capture 1 ended: 3 packets written", "capture 2 ended: 0 packets written"])
    }

    @Test("Eight captures at once at most; a loopback port's tells the two ways apart by the port's side")
    func limits() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0", "lo"]))
        var grants: [CaptureGrant] = []
        for _ in 0..<Conditioner.maximumCaptures {
            grants.append(try await conditioner.beginCapture(by: TestDaemon.root) { _, _ in })
        }
        await expectRefusal(CaptureRefusal.self) { try await conditioner.beginCapture(by: TestDaemon.root) { _, _ in } }
        await conditioner.endCapture(grants[0], by: TestDaemon.root, detail: "")
        _ = try await conditioner.beginCapture(by: TestDaemon.root) { _, _ in }
        let loopback = ConditionID(interface: "lo", peer: try PeerSpec(parsing: "127.0.0.1:8080"))
        await conditioner.endCapture(grants[1], by: TestDaemon.root, detail: "")
        let local = try await conditioner.beginCapture(on: loopback, by: TestDaemon.root) { _, _ in }
        #expect(local.interface == "lo" && local.portIsLocalServer && local.port == 8080)
        let filter = CaptureFilter(networks: local.networks, port: local.port, transports: local.transports, portIsLocalServer: true)
        #expect(filter.expression(for: .uplink) == "(net 127.0.0.1/32) and (tcp dst port 8080 or udp dst port 8080)")
        #expect(filter.expression(for: .downlink) == "(net 127.0.0.1/32) and (tcp src port 8080 or udp src port 8080)")
        #expect(!grants[2].portIsLocalServer)
    }

    @Test("A gateway device's capture faces the device: what leaves the interface arrives at it")
    func device() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0"]))
        let device = ConditionID(interface: "eth0", peer: try PeerSpec(parsing: "device=192.168.50.10"))
        let grant = try await conditioner.beginCapture(on: device, by: TestDaemon.root) { _, _ in }
        #expect(grant.facesTheApp && grant.networks == ["192.168.50.10/32"] && grant.port == nil)
    }

    @Test("A capture of an interface that is not there is refused, its handle closed once")
    func missingInterface() {
        let scope = CaptureSession.Scope(
            interface: "nosuch0", ifb: nil, namespacePath: nil, filter: CaptureFilter(), facesTheApp: false, targetName: "nosuch0"
        )
        #expect(throws: CaptureError.self) { try CaptureSession(scope) }
    }

    @Test("The filter: every packet for a whole interface; networks and a port otherwise")
    func filters() {
        #expect(CaptureFilter().expression == nil)
        #expect(CaptureFilter(networks: ["0.0.0.0/0", "::/0"]).expression == nil)
        #expect(CaptureFilter(networks: ["10.0.0.0/8", "2001:db8::/32"]).expression == "(net 10.0.0.0/8 or net 2001:db8::/32)")
        #expect(CaptureFilter(networks: ["0.0.0.0/0", "::/0"], port: 53).expression == "port 53")
        #expect(CaptureFilter(networks: ["0.0.0.0/0"], port: 53, transports: ["udp"]).expression == "(udp port 53)")
        #expect(CaptureFilter(port: 53, transports: ["udp"]).expression(for: .downlink) == "(udp port 53)")
        #expect(CaptureFilter(port: 53, transports: ["udp", "tcp"], portIsLocalServer: true).expression(for: .downlink) == "(udp src port 53 or tcp src port 53)")
    }
}

private final class Heard: Sendable {
    private let told = Mutex<[(String, String?)]>([])
    func add(_ note: String, ifb: String?) { told.withLock { $0.append((note, ifb)) } }
    var all: [String] { told.withLock { $0.map(\.0) } }
    var downlinks: [String?] { told.withLock { $0.map(\.1) } }
}
