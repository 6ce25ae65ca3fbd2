import ControlAPI
import Foundation
import Glibc
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOHTTP1
import NIOPosix
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("Control API routing and JSON")
struct ControlRouterTests {
    let kernel = FakeKernel(interfaces: ["eth0"])
    let router: ControlRouter

    init() {
        router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer)
    }

    func send(_ method: HTTPMethod, _ uri: String, _ body: String = "", as requester: Requester = TestDaemon.root) async -> ControlReply {
        await router.respond(to: ControlRequest(method: method, uri: uri, body: Array(body.utf8), requester: requester))
    }

    func decode<Value: Decodable>(_ type: Value.Type, _ reply: ControlReply) throws -> Value {
        try JSONDecoder().decode(type, from: Data(reply.body))
    }

    @Test("GET /v1/status when off")
    func statusOff() async throws {
        let reply = await send(.GET, "/v1/status")
        #expect(reply.status == .ok)
        let status = try decode(StatusResponse.self, reply)
        #expect(status.active == false)
        #expect(status.profile == nil)
        #expect(status.lease == nil)
        #expect(status.interface == "eth0")
        #expect(status.ifb == "lc-eth0")
        #expect(status.exemptions == ["tcp/22"])
    }

    @Test("GET /v1/profiles lists profiles sorted, and the files that were skipped")
    func listProfiles() async throws {
        let listing = try decode(ProfileListResponse.self, await send(.GET, "/v1/profiles"))
        #expect(listing.profiles.map(\.name) == ["100% Loss", "Nasty Net", "Slow Net"])
        #expect(listing.problems.map(\.description) == ["/profiles/broken.yaml:4: downlink.loss: loss '120%' is out of range"])
    }

    @Test("GET /v1/profiles/{name} finds by display name or stem, percent-encoded")
    func showProfile() async throws {
        for path in ["/v1/profiles/Slow%20Net", "/v1/profiles/slow-net", "/v1/profiles/SLOW%20NET/", "/v1/profiles/slow-net?x=1"] {
            let profile = try decode(ProfileDocument.self, await send(.GET, path))
            #expect(profile.name == "Slow Net")
            #expect(profile.uplink.bandwidth == "32kbit")
            #expect(profile.dnsDelay == "200ms")
        }
        let loss = try decode(ProfileDocument.self, await send(.GET, APIPath.profile("100% Loss")))
        #expect(loss.downlink.loss == "100%")
        #expect(loss.downlink.bandwidth == nil)
    }

    @Test("An unknown profile is a 404 with suggestions")
    func unknownProfile() async throws {
        let reply = await send(.PUT, "/v1/condition", #"{"profile": "slow nte"}"#)
        #expect(reply.status == .notFound)
        let error = try decode(ErrorResponse.self, reply)
        #expect(error.error.code == "unknown-profile")
        #expect(error.error.suggestions == ["Slow Net"])
        #expect(kernel.executed.isEmpty)
    }

    @Test("PUT /v1/condition activates and answers with the new status")
    func activate() async throws {
        let reply = await send(.PUT, "/v1/condition", #"{"profile": "slow-net"}"#)
        #expect(reply.status == .ok)
        let status = try decode(StatusResponse.self, reply)
        #expect(status.active)
        #expect(status.profile?.name == "Slow Net")
        #expect(kernel.devices["lc-eth0"] != nil)
    }

    @Test("PUT /v1/condition with 'for' makes a timed lease")
    func activateLease() async throws {
        let status = try decode(StatusResponse.self, await send(.PUT, "/v1/condition", #"{"profile": "Nasty Net", "for": "1h"}"#, as: TestDaemon.alice))
        let lease = try #require(status.lease)
        #expect(lease.kind == .timed)
        #expect(lease.holder.uid == 1000)
        #expect(lease.restores == "off")
        #expect((3590...3600).contains(lease.secondsLeft ?? 0))
    }

    @Test("A bad lease duration is a 400")
    func badDuration() async throws {
        let reply = await send(.PUT, "/v1/condition", #"{"profile": "Nasty Net", "for": "soon"}"#)
        #expect(reply.status == .badRequest)
        #expect(try decode(ErrorResponse.self, reply).error.message.contains("'soon'"))
        #expect(kernel.executed.isEmpty)
    }

    @Test("A held lease is a 409 naming the holder; force takes over")
    func leaseConflict() async throws {
        _ = await send(.PUT, "/v1/condition", #"{"profile": "Nasty Net", "for": "10m"}"#, as: TestDaemon.alice)
        let conflict = await send(.PUT, "/v1/condition", #"{"profile": "Slow Net"}"#)
        #expect(conflict.status == .conflict)
        let error = try decode(ErrorResponse.self, conflict)
        #expect(error.error.code == "lease-held")
        #expect(error.error.message.contains("uid 1000 (alice)"))
        #expect(error.error.message.contains("pytest -k offline"))
        #expect(await send(.DELETE, "/v1/condition").status == .conflict)

        let forced = try decode(StatusResponse.self, await send(.PUT, "/v1/condition", #"{"profile": "Slow Net", "force": true}"#))
        #expect(forced.profile?.name == "Slow Net")
        #expect(forced.lease == nil)
    }

    @Test("DELETE /v1/condition turns shaping off, and is fine when already off")
    func deactivate() async throws {
        _ = await send(.PUT, "/v1/condition", #"{"profile": "Nasty Net"}"#)
        for _ in 0..<2 {
            let reply = await send(.DELETE, "/v1/condition")
            #expect(reply.status == .ok)
            #expect(try decode(StatusResponse.self, reply).active == false)
        }
        #expect(kernel.devices["lc-eth0"] == nil)
    }

    @Test("DELETE with ?force ends someone else's lease")
    func forcedOff() async throws {
        _ = await send(.PUT, "/v1/condition", #"{"profile": "Nasty Net", "for": "10m"}"#, as: TestDaemon.alice)
        let reply = await send(.DELETE, "/v1/condition?force=1")
        #expect(reply.status == .ok)
        #expect(try decode(StatusResponse.self, reply).active == false)
    }

    @Test("Users outside the group get a 403 naming it, and nothing changes", arguments: [
        (HTTPMethod.PUT, "/v1/condition", #"{"profile": "Slow Net"}"#),
        (HTTPMethod.DELETE, "/v1/condition", ""),
        (HTTPMethod.POST, "/v1/reload", ""),
        (HTTPMethod.POST, "/v1/leases", #"{"profile": "Slow Net"}"#),
        (HTTPMethod.POST, "/v1/condition/reset", ""),
        (HTTPMethod.POST, "/v1/conditions/eth0%40192.0.2.7/reset?force=1", ""),
    ])
    func forbidden(method: HTTPMethod, path: String, body: String) async throws {
        let reply = await send(method, path, body, as: TestDaemon.bob)
        #expect(reply.status == .forbidden)
        let error = try decode(ErrorResponse.self, reply)
        #expect(error.error.code == "forbidden")
        #expect(error.error.message.contains("'linkcond'"))
        #expect(error.error.message.contains("uid 1001 (bob)"))
        #expect(kernel.executed.isEmpty)
    }

    @Test("Everyone may read")
    func readsAreOpen() async throws {
        for path in ["/v1/status", "/v1/profiles", "/v1/profiles/slow-net", "/v1/history"] {
            #expect(await send(.GET, path, as: TestDaemon.bob).status == .ok)
        }
    }

    @Test("Group members may change the condition")
    func groupMember() async throws {
        #expect(await send(.PUT, "/v1/condition", #"{"profile": "Slow Net"}"#, as: TestDaemon.alice).status == .ok)
    }

    @Test("Bad request bodies are 400s that say what is wrong", arguments: [
        ("", "needs a JSON body"),
        ("{", "not valid JSON"),
        ("{}", "lacks the field 'profile'"),
        ("[1, 2]", "must be a JSON object"),
        (#"{"name": "Slow Net"}"#, "unknown field 'name'"),
        (#"{"profile": "Slow Net", "forse": true}"#, "unknown field 'forse'"),
        (#"{"profile": 3}"#, "'profile' has the wrong type"),
        (#"{"definition": {"yaml": "name: Mine", "source": "x", "sorce": "y"}}"#, "unknown field 'definition.sorce'"),
        (#"{"profile": "Slow Net", "replaceForeign": null}"#, "'replaceForeign' is null"),
    ])
    func badBodies(body: String, message: String) async throws {
        let reply = await send(.PUT, "/v1/condition", body)
        #expect(reply.status == .badRequest)
        let error = try decode(ErrorResponse.self, reply)
        #expect(error.error.code == "bad-request")
        #expect(error.error.message.contains(message))
    }

    @Test("A wrong method is a 405 naming the allowed ones")
    func wrongMethod() async throws {
        let reply = await send(.POST, "/v1/condition", #"{"profile": "Slow Net"}"#)
        #expect(reply.status == .methodNotAllowed)
        #expect(reply.allow == [.PUT, .DELETE])
        #expect(try decode(ErrorResponse.self, reply).error.code == "method-not-allowed")
    }

    @Test("An unknown path is a JSON 404; the fault hook does not exist unless enabled")
    func unknownPath() async throws {
        for path in ["/v2/status", "/v1/debug/fault"] {
            let reply = await send(.PUT, path, #"{"failAtStep": 1}"#)
            #expect(reply.status == .notFound)
            #expect(try decode(ErrorResponse.self, reply).error.code == "not-found")
        }
    }

    @Test("A foreign qdisc is a 409; replaceForeign replaces it")
    func foreignQdisc() async throws {
        kernel.addForeignQdisc(on: "eth0", parent: .root, handle: .init(major: 1), kind: "htb")
        let conflict = await send(.PUT, "/v1/condition", #"{"profile": "Slow Net"}"#)
        #expect(conflict.status == .conflict)
        #expect(try decode(ErrorResponse.self, conflict).error.code == "foreign-qdisc")

        let replaced = await send(.PUT, "/v1/condition", #"{"profile": "Slow Net", "replaceForeign": true}"#)
        #expect(replaced.status == .ok)
    }

    @Test("A kernel without netem gets a 500 naming sch_netem, and nothing stays behind")
    func missingModule() async throws {
        let before = kernel.fullState
        kernel.refusal = { step, _ in
            if case .addQdisc(_, let node) = step, node.settings.kind == "netem" {
                return FakeKernel.error(ENOENT, step, message: "Specified qdisc kind is unknown")
            }
            return nil
        }
        let reply = await send(.PUT, "/v1/condition", #"{"profile": "Slow Net"}"#)
        #expect(reply.status == .internalServerError)
        let error = try decode(ErrorResponse.self, reply)
        #expect(error.error.code == "missing-kernel-module")
        #expect(error.error.message.contains("sch_netem"))
        #expect(kernel.fullState == before)
    }

    @Test("The fault hook, when enabled, fails the chosen step and the change rolls back")
    func faultHook() async throws {
        let faults = FaultSwitch()
        let kernel = FakeKernel(interfaces: ["eth0"])
        let before = kernel.fullState
        let conditioner = Conditioner(
            engine: ShapingEngine(kernel: FaultInjectingKernel(wrapping: kernel, faults: faults), logger: .quiet),
            target: ShapingTarget(interface: "eth0"), planner: Planner(),
            catalog: ProfileCatalog(entries: TestDaemon.profiles), eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: .quiet
        )
        let router = ControlRouter(conditioner: conditioner, authorizer: TestDaemon.authorizer, faults: faults)
        let armed = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/debug/fault", body: Array(#"{"failAtStep": 5}"#.utf8), requester: TestDaemon.root))
        #expect(armed.status == .ok)
        let failed = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/condition", body: Array(#"{"profile": "Slow Net"}"#.utf8), requester: TestDaemon.root))
        #expect(failed.status == .internalServerError)
        #expect(try decode(ErrorResponse.self, failed).error.message.contains("fault injected"))
        #expect(kernel.fullState == before)
        let retried = await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/condition", body: Array(#"{"profile": "Slow Net"}"#.utf8), requester: TestDaemon.root))
        #expect(retried.status == .ok)
    }
}

@Suite("Profiles given with the request")
struct AdHocProfileTests {
    let kernel = FakeKernel(interfaces: ["eth0"])
    let router: ControlRouter

    init() {
        router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer)
    }

    func put(_ body: String) async -> ControlReply {
        await router.respond(to: ControlRequest(method: .PUT, uri: "/v1/condition", body: Array(body.utf8), requester: TestDaemon.root))
    }

    @Test("A definition is applied, and status and history say what it is")
    func applied() async throws {
        let body = #"{"definition": {"yaml": "name: ad hoc\ndescription: \"--rate 1Mbit\"\ndownlink:\n  bandwidth: \"1Mbit\"\n", "source": "command line"}}"#
        let reply = await put(body)
        #expect(reply.status == .ok)
        let status = try JSONDecoder().decode(StatusResponse.self, from: Data(reply.body))
        #expect(status.profile?.name == "ad hoc")
        #expect(status.profile?.file == "command line")
        #expect(status.profile?.downlink.bandwidth == "1Mbit")
        #expect(kernel.devices["lc-eth0"] != nil)
    }

    @Test("A bad definition is a 400 naming the field, exactly as a profile file's error would", arguments: [
        (#"{"definition": {"yaml": "name: x\nuplink: { loss: 120% }\n", "source": "/home/a/p.yaml"}}"#, "uplink.loss", "/home/a/p.yaml:2: uplink.loss"),
        (#"{"definition": {"yaml": "name: x\nuplink: { delay: 1ms, jitter: 2ms }\n", "source": "command line"}}"#, "uplink.jitter", "larger than the delay"),
        (#"{"definition": {"yaml": "name: x\nuplnk: {}\n", "source": "command line"}}"#, "uplnk", "did you mean 'uplink'"),
    ])
    func refused(body: String, field: String, message: String) async throws {
        let reply = await put(body)
        #expect(reply.status == .badRequest)
        let error = try JSONDecoder().decode(ErrorResponse.self, from: Data(reply.body))
        #expect(error.error.code == "bad-profile")
        #expect(error.error.problem?.field == field)
        #expect(error.error.message.contains(message))
        #expect(kernel.executed.isEmpty)
    }

    @Test("Both a name and a definition, or neither, is a 400")
    func exactlyOne() async {
        #expect(await put(#"{"profile": "Slow Net", "definition": {"yaml": "name: x\n", "source": "s"}}"#).status == .badRequest)
        #expect(await put(#"{"force": true}"#).status == .badRequest)
    }
}
