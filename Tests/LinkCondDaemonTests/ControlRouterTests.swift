import ControlAPI
import Foundation
import Glibc
@testable import LinkCondDaemon
import NIOHTTP1
import Shaping
import ShapingTestSupport
import Testing

@Suite("Control API routing and JSON")
struct ControlRouterTests {
    let kernel = FakeKernel(interfaces: ["eth0"])
    var router: ControlRouter { ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel)) }

    func send(_ method: HTTPMethod, _ path: String, _ body: String = "") async -> ControlReply {
        await router.respond(to: ControlRequest(method: method, path: path, body: Array(body.utf8)))
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
        for path in ["/v1/profiles/Slow%20Net", "/v1/profiles/slow-net", "/v1/profiles/SLOW%20NET/"] {
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

    @Test("DELETE /v1/condition turns shaping off, and is fine when already off")
    func deactivate() async throws {
        let router = router
        _ = await router.respond(to: ControlRequest(method: .PUT, path: "/v1/condition", body: Array(#"{"profile": "Nasty Net"}"#.utf8)))
        for _ in 0..<2 {
            let reply = await router.respond(to: ControlRequest(method: .DELETE, path: "/v1/condition", body: []))
            #expect(reply.status == .ok)
            #expect(try decode(StatusResponse.self, reply).active == false)
        }
        #expect(kernel.devices["lc-eth0"] == nil)
    }

    @Test("Bad request bodies are 400s that say what is wrong", arguments: [
        ("", "needs a JSON body"),
        ("{", "not valid JSON"),
        (#"{"name": "Slow Net"}"#, "lacks the field 'profile'"),
        (#"{"profile": 3}"#, "'profile' has the wrong type"),
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

    @Test("An unknown path is a JSON 404")
    func unknownPath() async throws {
        let reply = await send(.GET, "/v2/status")
        #expect(reply.status == .notFound)
        #expect(try decode(ErrorResponse.self, reply).error.code == "not-found")
    }

    @Test("A foreign qdisc is a 409; a missing module a 500 naming it")
    func kernelTrouble() async throws {
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
}
