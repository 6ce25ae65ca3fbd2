import ControlAPI
import Foundation
import IPAddressText
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Shaping
import ShapingTestSupport
import Testing

/// Conditions on a peer named by a host name (`--to api.example.com:443`): looked up once, when
/// the condition is made, through the router, never inside the conditioner.
@Suite("Conditions on a host name")
struct HostNameConditionTests {
    static let api = try! ConditionID(parsing: "eth0@api.example.com:443")
    static let first: [[UInt8]] = [[203, 0, 113, 5], [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [5]]
    static let second: [[UInt8]] = [[203, 0, 113, 9]]

    /// A resolver whose answers a test sets, counting its lookups.
    final class Answers: Sendable {
        let state = NIOLockedValueBox<(answer: Result<[[UInt8]], HostNameError>, lookups: [String])>((.success(first), []))

        var lookups: [String] { state.withLockedValue { $0.lookups } }

        func answer(_ result: Result<[[UInt8]], HostNameError>) {
            state.withLockedValue { $0.answer = result }
        }

        var resolver: HostNameResolver {
            HostNameResolver(timerLoop: MultiThreadedEventLoopGroup.singleton.next()) { [self] name throws(HostNameError) in
                let answer = state.withLockedValue { state in
                    state.lookups.append(name)
                    return state.answer
                }
                return try answer.get()
            }
        }
    }

    static func put(_ router: ControlRouter, _ id: String, _ profile: String) async -> ControlReply {
        await router.respond(to: ControlRequest(
            method: .PUT, uri: APIPath.condition(id), body: Array(#"{"profile": "\#(profile)"}"#.utf8), requester: TestDaemon.root
        ))
    }

    static func decoded<Document: Decodable>(_ type: Document.Type, _ reply: ControlReply) throws -> Document {
        try JSONDecoder().decode(type, from: Data(reply.body))
    }

    /// How many of the kernel's filters name `address`, as source or destination.
    static func filters(for address: [UInt8], in kernel: FakeKernel) -> Int {
        kernel.fullState.split(separator: "\n").filter { $0.contains("FlowerAddress(address: \(address), ") }.count
    }

    @Test("A host name's condition matches each address it resolved to, and keeps them while it lasts")
    func resolvedOnceWhenMade() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let answers = Answers()
        let router = ControlRouter(conditioner: TestDaemon.conditioner(kernel: kernel), authorizer: TestDaemon.authorizer, hostNames: answers.resolver)

        let made = await Self.put(router, Self.api.description, "Nasty Net")
        #expect(made.status == .ok)
        let status = try Self.decoded(StatusResponse.self, made)
        #expect(status.id == "eth0@api.example.com:443")
        #expect(status.peer == "api.example.com:443")
        #expect(status.addresses == ["203.0.113.5", "2001:db8::5"])
        #expect(answers.lookups == ["api.example.com"])
        // Each address, each transport, each direction.
        #expect(Self.filters(for: Self.first[0], in: kernel) == 4)
        #expect(Self.filters(for: Self.first[1], in: kernel) == 4)

        // A switch keeps the addresses: no lookup, the same filters.
        answers.answer(.success(Self.second))
        let switched = await Self.put(router, Self.api.description, "Slow Net")
        #expect(switched.status == .ok)
        #expect(try Self.decoded(StatusResponse.self, switched).addresses == ["203.0.113.5", "2001:db8::5"])
        #expect(answers.lookups.count == 1)
        #expect(Self.filters(for: Self.second[0], in: kernel) == 0)
        #expect(Self.filters(for: Self.first[0], in: kernel) == 4)

        // Ended and made again: looked up again.
        #expect(await router.respond(to: ControlRequest(method: .DELETE, uri: APIPath.condition(Self.api.description), body: [], requester: TestDaemon.root)).status == .ok)
        let again = await Self.put(router, Self.api.description, "Slow Net")
        #expect(try Self.decoded(StatusResponse.self, again).addresses == ["203.0.113.9"])
        #expect(answers.lookups.count == 2)
        #expect(Self.filters(for: Self.second[0], in: kernel) == 4)
        #expect(Self.filters(for: Self.first[0], in: kernel) == 0)
    }

    @Test("A host name that does not resolve is a JSON error, and changes nothing", arguments: [
        (HostNameError.Code.notFound, 400), (.unavailable, 503), (.timedOut, 503),
    ])
    func refused(code: HostNameError.Code, status: Int) async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let answers = Answers()
        answers.answer(.failure(HostNameError(name: "api.example.com", code: code, detail: "test")))
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let router = ControlRouter(conditioner: conditioner, authorizer: TestDaemon.authorizer, hostNames: answers.resolver)
        let reply = await Self.put(router, Self.api.description, "Nasty Net")
        #expect(Int(reply.status.code) == status)
        let error = try Self.decoded(ErrorResponse.self, reply)
        #expect(error.error.code == code.rawValue)
        #expect(error.error.message.contains("api.example.com"))
        #expect(kernel.fullState == pristine)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }

    @Test("What a name resolves to is sorted, distinct, bounded, and never loopback")
    func checkedAddresses() throws {
        let v6: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
        #expect(try HostNameResolver.checked([v6, [10, 0, 0, 9], [10, 0, 0, 2], [10, 0, 0, 9]], of: "x") == [[10, 0, 0, 2], [10, 0, 0, 9], v6])
        #expect(throws: HostNameError(name: "x", code: .notFound, detail: "it has no IPv4 or IPv6 address")) {
            try HostNameResolver.checked([], of: "x")
        }
        let many = (0..<33).map { [10, 0, 1, UInt8($0)] }
        #expect(try HostNameResolver.checked(Array(many.prefix(32)), of: "x").count == 32)
        #expect { try HostNameResolver.checked(many, of: "x") } throws: { ($0 as? HostNameError)?.code == .tooManyAddresses }
        #expect { try HostNameResolver.checked([[10, 0, 0, 1], [127, 0, 1, 1]], of: "x") } throws: { ($0 as? HostNameError)?.code == .loopback }
        #expect { try HostNameResolver.checked([[UInt8](repeating: 0, count: 15) + [1]], of: "x") } throws: { ($0 as? HostNameError)?.code == .loopback }
    }

    @Test("The system resolver: localhost is this machine's own, and refused as a peer")
    func systemResolver() async throws {
        let addresses = try HostNameResolver.systemLookUp("localhost")
        #expect(addresses.contains([127, 0, 0, 1]))
        let resolver = HostNameResolver(timerLoop: MultiThreadedEventLoopGroup.singleton.next())
        await #expect { try await resolver.addresses(of: "localhost") } throws: { ($0 as? HostNameError)?.code == .loopback }
        // A reserved name that never exists (RFC 6761): not found, or no resolver to ask.
        await #expect { try await resolver.addresses(of: "linkcond-test.invalid") } throws: {
            [.notFound, .unavailable, .timedOut].contains(($0 as? HostNameError)?.code)
        }
    }

    @Test("A lookup that outlives its deadline is answered as timed out, and its late answer dropped")
    func deadline() async throws {
        let release = NIOLockedValueBox(false)
        var resolver = HostNameResolver(timerLoop: MultiThreadedEventLoopGroup.singleton.next()) { _ throws(HostNameError) in
            while !release.withLockedValue({ $0 }) { usleep(10_000) }
            return [[192, 0, 2, 1]]
        }
        resolver.timeout = .milliseconds(200)
        let began = ContinuousClock.now
        await #expect { try await resolver.addresses(of: "slow.example") } throws: { ($0 as? HostNameError)?.code == .timedOut }
        // A bound against a hang (the lookup never returns before its release), not a speed
        // target: beside every other test on two CPUs, the answer once took 5.2 s to resume.
        #expect(ContinuousClock.now - began < .seconds(20))
        release.withLockedValue { $0 = true }
        resolver.lookUp = { _ throws(HostNameError) in [[192, 0, 2, 2]] }
        #expect(try await resolver.addresses(of: "fast.example") == [[192, 0, 2, 2]])
    }

    @Test("A restarted daemon matches the stored addresses again, without a lookup")
    func restart() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let first = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        _ = try await first.activate("Nasty Net", on: Self.api, by: TestDaemon.root, hostAddresses: Self.first)
        #expect(StateStore(directory: directory.path, condition: Self.api).load()?.hostAddresses == ["203.0.113.5", "2001:db8::5"])
        let before = MatchConditionTests.canonicalState(kernel)

        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: directory.path)
        let mark = kernel.executed.count
        try await second.recover()
        #expect(kernel.changedInPlace(since: mark), "re-adopted, not rebuilt")
        #expect(MatchConditionTests.canonicalState(kernel) == before)
        let status = try await second.status(Self.api)
        #expect(status.addresses?.map(formatIPAddress) == ["203.0.113.5", "2001:db8::5"])
        #expect(status.profile?.name == "Nasty Net")
    }

    @Test("A request for a host name without its addresses puts nothing in force")
    func withoutAddresses() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let pristine = kernel.fullState
        let conditioner = TestDaemon.conditioner(kernel: kernel)
        let refusal = await expectRefusal(HostNameError.self) { try await conditioner.activate("Nasty Net", on: Self.api, by: TestDaemon.root) }
        #expect(refusal?.code == .unavailable)
        #expect(kernel.fullState == pristine)
        #expect(await conditioner.conditionList().map(\.id.description) == ["eth0"])
    }
}
