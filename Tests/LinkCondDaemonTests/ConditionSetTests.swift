import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import NIOHTTP1
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("Conditions on several interfaces at once")
struct ConditionSetTests {
    static let eth1 = ConditionID(interface: "eth1")

    /// The devices a list of steps touched.
    static func devices(_ steps: some Sequence<TrafficStep>) -> Set<String> {
        Set(steps.map { step in
            switch step {
            case .createIFB(let name), .deleteLink(let name): return name
            case .addQdisc(let device, _), .changeQdisc(let device, _), .addClass(let device, _), .changeClass(let device, _),
                .deleteClass(let device, _), .addFilter(let device, _), .replaceFilter(let device, _), .deleteFilter(let device, _),
                .deleteQdisc(let device, _, _):
                return device
            }
        })
    }

    @Test("Each interface has its own condition; a change to one touches only its own devices")
    func independent() async throws {
        let kernel = FakeKernel(interfaces: ["eth0", "eth1", "eth2"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let untouched = ["eth0", "lc-eth0"].map(kernel.state(of:))

        var mark = kernel.executed.count
        let status = try await conditioner.activate("Nasty Net", on: Self.eth1, by: TestDaemon.root)
        #expect(status.id.description == "eth1" && status.target.interface == "eth1" && status.target.ifb == "lc-eth1" && !status.isDefault)
        #expect(Self.devices(kernel.executed[mark...]) == ["eth1", "lc-eth1"])

        mark = kernel.executed.count
        _ = try await conditioner.activate("Slow Net", on: Self.eth1, by: TestDaemon.root)
        #expect(Self.devices(kernel.executed[mark...]) == ["eth1", "lc-eth1"])
        #expect(kernel.executed[mark...].allSatisfy { if case .changeQdisc = $0 { true } else if case .changeClass = $0 { true } else { false } })

        let list = await conditioner.conditionList()
        #expect(list.map(\.id.description) == ["eth0", "eth1"])
        #expect(list.map { $0.profile?.name } == ["Slow Net", "Slow Net"])
        #expect(list.map(\.isDefault) == [true, false])

        mark = kernel.executed.count
        _ = try await conditioner.deactivate(on: Self.eth1, by: TestDaemon.root)
        #expect(Self.devices(kernel.executed[mark...]) == ["eth1", "lc-eth1"])
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"], "an off condition leaves the set")
        #expect(["eth0", "lc-eth0"].map(kernel.state(of:)) == untouched)
        #expect(kernel.devices["lc-eth1"] == nil)
        #expect(try TestDaemon.conditionInKernel(kernel) == "Slow Net")
    }

    @Test("A switch costs the same number of netlink requests whatever the number of other conditions")
    func switchCost() async throws {
        func stepsPerSwitch(others: Int) async throws -> Int {
            let names = (0...others).map { "veth\($0)" }
            let kernel = FakeKernel(interfaces: ["eth0"] + names)
            let conditioner = TestDaemon.conditioner(kernel: kernel)
            for name in names {
                _ = try await conditioner.activate("Slow Net", on: ConditionID(interface: name), by: TestDaemon.root)
            }
            let mark = kernel.executed.count
            _ = try await conditioner.activate("Nasty Net", on: ConditionID(interface: "veth0"), by: TestDaemon.root)
            return kernel.executed.count - mark
        }
        let alone = try await stepsPerSwitch(others: 0)
        #expect(alone > 0)
        #expect(try await stepsPerSwitch(others: 15) == alone)
        #expect(try await stepsPerSwitch(others: 63) == alone)
    }

    @Test("An interface that does not exist is a 404 and creates nothing")
    func unknownInterface() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        await expectRefusal(UnknownInterfaceError.self) {
            try await conditioner.activate("Slow Net", on: ConditionID(interface: "nosuch0"), by: TestDaemon.root)
        }
        await expectRefusal(UnknownInterfaceError.self) { try await conditioner.status(ConditionID(interface: "nosuch0")) }
        #expect(kernel.executed.isEmpty)
        #expect(await conditioner.conditionList().count == 1)

        let router = ControlRouter(conditioner: conditioner, authorizer: TestDaemon.authorizer)
        let reply = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/conditions/nosuch0", body: Array(#"{"profile": "Slow Net"}"#.utf8), requester: TestDaemon.root))
        #expect(reply.status == .notFound)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("unknown-interface"))
    }

    @Test("lo takes conditions only on a local server's port: without one every packet would be shaped twice",
          arguments: ["lo", "lo@127.0.0.1", "lo@::1", "lo@device=127.0.0.1"])
    func loopbackNeedsAPort(text: String) async throws {
        let kernel = FakeKernel(interfaces: ["eth0", "lo"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let id = try ConditionID(parsing: text)
        await expectRefusal(LoopbackConditionError.self) {
            try await conditioner.activate("Slow Net", on: id, by: TestDaemon.root)
        }
        #expect(kernel.executed.isEmpty)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("A local server's port (@127.0.0.1:8080, @[::1]:8080) is a condition on lo: towards it leaving lo, from it arriving")
    func loopbackServer() async throws {
        let kernel = FakeKernel(interfaces: ["eth0", "lo"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let untouched = kernel.state(of: "eth0")
        let v4 = try await conditioner.activate("Slow Net", on: ConditionID(parsing: "@127.0.0.1:8080"), by: TestDaemon.root)
        #expect(v4.id.description == "lo@127.0.0.1:8080" && v4.target.interface == "lo" && v4.target.ifb == "lc-lo")
        let v6 = try await conditioner.activate("Nasty Net", on: ConditionID(parsing: "@[::1]:8080/tcp"), by: TestDaemon.root)
        #expect(v6.id.description == "lo@[::1]:8080/tcp")
        #expect(Self.devices(kernel.executed) == ["lo", "lc-lo"])
        #expect(kernel.state(of: "eth0") == untouched)
        #expect(kernel.htbClass(ReservedHandles.profileClass, on: "lo") == nil, "nothing shapes lo as a whole")

        /// The flower keys that send packets to the two matches' classes.
        func matchKeys(on device: String) -> [FlowerKey] {
            let classes = [ReservedHandles.matchClass(1), ReservedHandles.matchClass(2)].map(FilterNode.Target.classify)
            return kernel.devices[device]!.filters.values.joined().compactMap { filter in
                guard classes.contains(filter.target), case .flower(_, let key) = filter.classifier else { return nil }
                return key
            }
        }
        let egress = matchKeys(on: "lo")
        let ingress = matchKeys(on: "lc-lo")
        #expect(egress.count == 3 && ingress.count == 3, "TCP and UDP to 127.0.0.1:8080, TCP to [::1]:8080, each way")
        #expect(egress.contains { $0.destinationPort == 8080 && $0.sourcePort == nil })
        #expect(ingress.contains { $0.sourcePort == 8080 && $0.destinationPort == nil })
        #expect(!egress.contains { $0.sourcePort == 8080 } && !ingress.contains { $0.destinationPort == 8080 },
                "a packet is matched one way only: towards the server on the way out, from it on the way in")

        _ = try await conditioner.deactivateAll(by: TestDaemon.root)
        #expect(kernel.devices["lc-lo"] == nil)
        #expect(kernel.devices["lo"]?.qdiscs.map(\.kind) == ["noqueue"])
    }

    @Test("A condition not held shows as off, as long as its interface exists")
    func absentIsOff() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0", "eth1"]))
        let status = try await conditioner.status(Self.eth1)
        #expect(status.id.description == "eth1" && !status.isActive && status.profile == nil)
        #expect(await conditioner.conditionList().count == 1, "asking does not create it")
    }

    @Test("A restarted daemon brings back every condition from its state file, and a stop removes them all")
    func recoverAll() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0", "eth1", "eth2"])
        let first = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        _ = try await first.activate("Slow Net", by: TestDaemon.root)
        _ = try await first.activate("Nasty Net", on: Self.eth1, by: TestDaemon.root)
        _ = try await first.activate("Nasty Net", on: ConditionID(interface: "eth2"), by: TestDaemon.root)
        _ = try await first.deactivate(on: ConditionID(interface: "eth2"), by: TestDaemon.root)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files == ["eth0.state.json", "eth1.state.json"], "an off condition's file goes with it")
        let before = ["eth0", "lc-eth0", "eth1", "lc-eth1"].map(kernel.state(of:))

        // The first daemon dies without a word; the next one finds the files.
        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        let mark = kernel.executed.count
        try await second.recover()
        let list = await second.conditionList()
        #expect(list.map(\.id.description) == ["eth0", "eth1"])
        #expect(list.map { $0.profile?.name } == ["Slow Net", "Nasty Net"])
        #expect(["eth0", "lc-eth0", "eth1", "lc-eth1"].map(kernel.state(of:)) == before)
        #expect(kernel.executed[mark...].allSatisfy { if case .createIFB = $0 { false } else if case .addQdisc = $0 { false } else { true } },
                "re-adopted, not rebuilt")

        try await second.shutdown()
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") }.isEmpty)
        #expect(kernel.devices["eth1"]?.qdiscs.map(\.kind) == ["noqueue"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("A state file for an interface that is gone is dropped at start-up, with its IFB")
    func recoverVanished() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0", "eth1"])
        _ = try await TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
            .activate("Nasty Net", on: Self.eth1, by: TestDaemon.root)
        kernel.removeDevice("eth1")
        #expect(kernel.devices["lc-eth1"] != nil)

        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        try await second.recover()
        #expect(await second.conditionList().map(\.id.description) == ["eth0"])
        #expect(kernel.devices["lc-eth1"] == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("eth1") }.isEmpty)
        #expect(await second.history(limit: 5).last?.condition == "eth1")
    }

    @Test("off --all is refused as a whole while another user holds a lease anywhere; --force ends them all")
    func offAll() async throws {
        let kernel = FakeKernel(interfaces: ["eth0", "eth1"])
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        _ = try await conditioner.activate("Nasty Net", on: Self.eth1, by: TestDaemon.alice, for: LeaseDuration(milliseconds: 60_000))
        let before = ["eth0", "lc-eth0", "eth1", "lc-eth1"].map(kernel.state(of:))
        await expectRefusal(LeaseConflictError.self) { try await conditioner.deactivateAll(by: TestDaemon.bob) }
        #expect(["eth0", "lc-eth0", "eth1", "lc-eth1"].map(kernel.state(of:)) == before)

        let list = try await conditioner.deactivateAll(by: TestDaemon.bob, force: true)
        #expect(list.map(\.id.description) == ["eth0"])
        #expect(list.allSatisfy { !$0.isActive })
        #expect(kernel.devices.keys.filter { $0.hasPrefix("lc-") }.isEmpty)
    }

    @Test("A closed lease connection never ends a later lease on a condition that was off in between")
    func leaseTickets() async throws {
        let conditioner = TestDaemon.conditioner(kernel: FakeKernel(interfaces: ["eth0", "eth1"]))
        let first = try await conditioner.hold("Nasty Net", on: Self.eth1, by: TestDaemon.alice, maximum: nil, onEnd: { _ in })
        _ = try await conditioner.deactivate(on: Self.eth1, by: TestDaemon.root, force: true)
        let second = try await conditioner.hold("Slow Net", on: Self.eth1, by: TestDaemon.bob, maximum: nil, onEnd: { _ in })
        #expect(first.lease != second.lease)
        #expect(await conditioner.release(first.lease) == nil)
        #expect(try await conditioner.status(Self.eth1).lease?.holder.uid == TestDaemon.bob.uid)
        #expect(await conditioner.release(second.lease)?.isActive == false)
        #expect(await conditioner.conditionList().count == 1)
    }

    @Test("Routes of the condition collection", arguments: [
        (HTTPMethod.GET, "/v1/conditions", APICall.conditions(verbose: false)),
        (.GET, "/v1/conditions?verbose", .conditions(verbose: true)),
        (.DELETE, "/v1/conditions?force=1", .deactivateAll(force: true)),
        (.GET, "/v1/conditions/eth1", .status(ConditionID(interface: "eth1"), verbose: false)),
        (.DELETE, "/v1/conditions/eth1/", .deactivate(ConditionID(interface: "eth1"), force: false)),
        (.DELETE, "/v1/conditions/veth%2D1/lease", .releaseLease(ConditionID(interface: "veth-1"))),
        (.GET, "/v1/conditions/netns/ci-1/eth0", .status(ConditionID(interface: "eth0", namespace: .named("ci-1")), verbose: false)),
        (.DELETE, "/v1/conditions/pid%2F4242%2Feth0/lease", .releaseLease(ConditionID(interface: "eth0", namespace: .process(4242)))),
        (.GET, "/v1/status", .status(nil, verbose: false)),
        (.DELETE, "/v1/lease", .releaseLease(nil)),
        (.POST, "/v1/condition/reset", .reset(nil, force: false)),
        (.POST, "/v1/conditions/eth1/reset?force=1", .reset(ConditionID(interface: "eth1"), force: true)),
        (.POST, "/v1/conditions/pid%2F4242%2F/reset", .reset(ConditionID(interface: "", namespace: .process(4242)), force: false)),
        (.GET, "/v1/condition/capture", .capture(nil, CaptureOptions())),
        (.GET, "/v1/conditions/eth1/capture?for=30s&count=10&snaplen=128",
         .capture(ConditionID(interface: "eth1"), CaptureOptions(duration: LeaseDuration(milliseconds: 30_000), count: 10, snapLength: 128))),
    ])
    func routes(method: HTTPMethod, uri: String, call: APICall) throws {
        let request = ControlRequest(method: method, uri: uri, body: [], requester: TestDaemon.root)
        #expect(try APICall.parse(request) == call)
    }

    @Test("A condition id that cannot be an interface's name is a 400", arguments: [
        "/v1/conditions/a%2Fb", "/v1/conditions//lease", "/v1/conditions/waytoolonginterfacename", "/v1/conditions/..",
        "/v1/conditions/eth0%20x", "/v1/conditions/%ZZ", "/v1/conditions/eth0:1",
        "/v1/conditions/pid/0/eth0", "/v1/conditions/pid/12a/eth0", "/v1/conditions/pid/4194305/eth0", "/v1/conditions/netns/../eth0",
        "/v1/conditions/netns//eth0", "/v1/conditions/ns/x/eth0", "/v1/conditions/netns/ci-1/eth0/x",
    ])
    func badIDs(uri: String) {
        let request = ControlRequest(method: .GET, uri: uri, body: [], requester: TestDaemon.root)
        #expect(throws: ControlError.self) { try APICall.parse(request) }
    }

    @Test("A lease request names its interface, or none for the default")
    func leaseInterface() throws {
        let body = Array(#"{"profile": "Slow Net", "interface": "eth1"}"#.utf8)
        let call = try APICall.parse(ControlRequest(method: .POST, uri: "/v1/leases", body: body, requester: TestDaemon.root))
        guard case .hold(let id, _, _, _) = call else { Issue.record("not a hold: \(call)"); return }
        #expect(id == Self.eth1)
        let bad = Array(#"{"profile": "Slow Net", "interface": "a/b"}"#.utf8)
        #expect(throws: ControlError.self) {
            try APICall.parse(ControlRequest(method: .POST, uri: "/v1/leases", body: bad, requester: TestDaemon.root))
        }
        let inNamespace = Array(#"{"profile": "Slow Net", "condition": "netns/ci-1/eth0"}"#.utf8)
        let held = try APICall.parse(ControlRequest(method: .POST, uri: "/v1/leases", body: inNamespace, requester: TestDaemon.root))
        guard case .hold(let namespaced, _, _, _) = held else { Issue.record("not a hold: \(held)"); return }
        #expect(namespaced == ConditionID(interface: "eth0", namespace: .named("ci-1")))
        let both = Array(#"{"profile": "Slow Net", "interface": "eth0", "condition": "netns/ci-1/eth0"}"#.utf8)
        #expect(throws: ControlError.self) {
            try APICall.parse(ControlRequest(method: .POST, uri: "/v1/leases", body: both, requester: TestDaemon.root))
        }
    }
}
