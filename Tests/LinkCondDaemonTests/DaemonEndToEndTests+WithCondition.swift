import Glibc
import LinkCondClient
import LinkCondTesting
import ShapingTestSupport
import Synchronization
import Testing

extension DaemonEndToEndTests {
    @Test("withCondition holds the profile for its body alone, bound to this process")
    func withConditionHoldsTheProfile() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let inside = try await client.withCondition("slow net", atMost: .seconds(60)) {
                try await client.status()
            }
            #expect(inside.profile?.name == "Slow Net")
            #expect(inside.lease?.kind == .clientBound)
            #expect(inside.lease?.holder.pid == getpid())
            #expect(inside.lease?.expires != nil)
            #expect(try await client.status().active == false)
        }
    }

    @Test("withCondition refuses before its body runs when the profile cannot be put in force")
    func withConditionRefuses() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            var ran = false
            let error = await #expect(throws: ControlClientError.self) {
                try await client.withCondition("No Such Net") { ran = true }
            }
            #expect(error?.status == 404)
            #expect(!ran)
        }
    }

    @Test("withCondition throws when the profile ends before its body returns")
    func withConditionInterrupted() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, _ in
            let error = await #expect(throws: ConditionInterrupted.self) {
                try await client.withCondition("Slow Net", atMost: .milliseconds(200)) {
                    try await Task.sleep(for: .milliseconds(700))
                }
            }
            guard case .ended(let event) = error?.outcome else {
                Issue.record("no end heard: \(String(describing: error))")
                return
            }
            #expect(event.reason == .expired)
            #expect(error?.description.contains("Slow Net ended before the code under it returned: expired") == true)
        }
    }

    @Test("The test trait holds its profile around the test it scopes, and ends it after")
    func networkConditionTrait() async throws {
        try await withDaemon(kernel: FakeKernel(interfaces: ["eth0"])) { client, socketPath in
            let trait: NetworkConditionTrait = .networkCondition("Slow Net", socketPath: socketPath)
            let test = try #require(Test.current)
            let seen = Mutex<StatusResponse?>(nil)
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                let status = try await client.status()
                seen.withLock { $0 = status }
            }
            let inside = seen.withLock { $0 }
            #expect(inside?.profile?.name == "Slow Net")
            #expect(inside?.lease?.kind == .clientBound)
            #expect(try await client.status().active == false)
        }
    }

    @Test("The socket comes from LINKCOND_SOCKET, else the packaged daemon's")
    func socketFromEnvironment() {
        #expect(ControlClient.socketPath(environment: [:]) == "/run/linkcond/control.sock")
        #expect(ControlClient.socketPath(environment: ["LINKCOND_SOCKET": ""]) == "/run/linkcond/control.sock")
        #expect(ControlClient.socketPath(environment: ["LINKCOND_SOCKET": "/tmp/x.sock"]) == "/tmp/x.sock")
    }
}
