import ControlAPI
import Foundation
@testable import LinkCondDaemon
import Profiles
import ShapingTestSupport
import Testing

/// Until the daemon can step a trace's rate, a trace-driven profile must be refused, never
/// shaped as if it had no rate limit. Remove with the refusal when traces are played.
@Suite("Trace-driven profiles, not yet played")
struct TraceLinksRefusalTests {
    static let recorded = CatalogEntry(
        profile: Profile(
            name: "Recorded",
            downlink: LinkConditions(trace: try! LinkTrace(name: "steady", file: "/profiles/steady.trace", timestamps: [1]), delay: .milliseconds(20))
        ),
        file: "/profiles/recorded.yaml", stem: "recorded"
    )

    @Test("activating one, for good or as a lease, is refused and leaves the condition and the state file as they were")
    func refused() async throws {
        let kernel = FakeKernel(interfaces: ["eth0"])
        let state = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let conditioner = TestDaemon.conditioner(
            kernel: kernel, stateDirectory: state.path,
            catalog: ProfileCatalog(entries: TestDaemon.profiles + [Self.recorded])
        )
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let kernelBefore = kernel.fullState
        let stateFile = state.appendingPathComponent("eth0.state.json")
        let stateBefore = try Data(contentsOf: stateFile)

        let error = await #expect(throws: TraceLinksUnsupportedError.self) {
            try await conditioner.activate("Recorded", by: TestDaemon.root)
        }
        #expect(error?.description == "'Recorded' follows a trace (trace:); trace-driven links are not supported by this daemon yet")
        await #expect(throws: TraceLinksUnsupportedError.self) {
            try await conditioner.activate(.defined(Self.recorded), by: TestDaemon.alice, for: LeaseDuration(milliseconds: 60_000))
        }

        #expect(await conditioner.status().profile?.name == "Slow Net")
        #expect(await conditioner.status().lease == nil)
        #expect(kernel.fullState == kernelBefore)
        #expect(try Data(contentsOf: stateFile) == stateBefore)
    }
}
