import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Netlink
import NIOCore
import Profiles
import Shaping
import ShapingTestSupport
import Testing

@Suite("Trace-driven profiles, played")
struct TracePlaybackTests {
    /// 100 ms at 1.2 Mbit/s, a 100 ms outage, 100 ms at 600 kbit/s, looping.
    static let timestamps = (1...9).map { "\($0)" } + (201...205).map { "\($0)" } + ["300"]

    /// A profile whose downlink follows the trace in `directory`/windows.trace.
    static func recorded(in directory: URL) throws -> ProfileEntry {
        let file = directory.appendingPathComponent("windows.trace")
        try (timestamps.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        return ProfileEntry(
            profile: Profile(
                name: "Recorded",
                downlink: LinkConditions(trace: try LinkTrace(contentsOfFile: file.path), delay: .milliseconds(20)),
                uplink: LinkConditions(bandwidth: .mbit(1))
            ),
            file: directory.appendingPathComponent("recorded.yaml").path, stem: "recorded"
        )
    }

    static func downlinkRate(_ kernel: FakeKernel) -> Bandwidth? {
        kernel.htbClass(ReservedHandles.profileClass, on: ShapingTarget(interface: "eth0").ifb)?.rate
    }

    /// The rates the downlink class was changed to since step `from` of the kernel's record.
    static func downlinkRates(_ kernel: FakeKernel, from: Int) -> [Bandwidth] {
        let ifb = ShapingTarget(interface: "eth0").ifb
        return kernel.executed.dropFirst(from).compactMap {
            guard case .changeClass(let device, let node) = $0, device == ifb, node.classID == ReservedHandles.profileClass else { return nil }
            return node.rate
        }
    }

    /// Waits up to `seconds` for the downlink class to have been changed to each of `rates` in
    /// turn since step `from` (a busy machine may fire timers late, never out of order).
    static func waitForDownlinkRates(_ rates: [Bandwidth], in kernel: FakeKernel, from: Int, seconds: Double = 20) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var wanted = rates[...]
            for rate in downlinkRates(kernel, from: from) where rate == wanted.first {
                wanted = wanted.dropFirst()
            }
            if wanted.isEmpty { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("the class's rate follows the trace window by window, in place, and stops with the profile")
    func follows() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, catalog: ProfileCatalog(entries: TestDaemon.profiles + [try Self.recorded(in: directory)]))

        let status = try await conditioner.activate("Recorded", by: TestDaemon.root)
        #expect(Self.downlinkRate(kernel) == .kbit(1_200))
        #expect(status.trace?.downlink?.capacity.description == "1.2Mbit")
        #expect(status.trace?.uplink == nil)
        #expect(status.profile?.downlink.trace?.name == "windows")
        #expect(status.profile?.downlink.bandwidth == nil, "the profile shows its trace, not the rate of the moment")
        let built = kernel.executed.count

        #expect(
            try await Self.waitForDownlinkRates([LinkTrace.outageRate(lasting: 100), .kbit(600), .kbit(1_200)], in: kernel, from: built),
            "the outage (one packet over its 100 ms), the last window, then the first again: \(Self.downlinkRates(kernel, from: built))"
        )
        let changes = kernel.executed[built...]
        #expect(!changes.isEmpty)
        #expect(changes.allSatisfy { if case .changeClass = $0 { true } else { false } }, "only classes change, in place: \(changes)")
        #expect(await conditioner.status().trace?.elapsedMilliseconds ?? 0 >= 300)

        _ = try await conditioner.deactivate(by: TestDaemon.root)
        let afterOff = kernel.executed.count
        try await Task.sleep(for: .milliseconds(400))
        #expect(kernel.executed.count == afterOff, "no timer changes anything once the profile is gone")
        #expect(await conditioner.status().trace == nil)
    }

    @Test("a peer's condition plays its trace in its own class, beside the whole interface's fixed profile")
    func peer() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kernel = FakeKernel(interfaces: ["eth0"])
        let conditioner = TestDaemon.conditioner(kernel: kernel, catalog: ProfileCatalog(entries: TestDaemon.profiles + [try Self.recorded(in: directory)]))
        let peer = try ConditionID(parsing: "eth0@10.0.0.5:443")
        _ = try await conditioner.activate("Slow Net", by: TestDaemon.root)
        let status = try await conditioner.activate("Recorded", on: peer, by: TestDaemon.root)
        #expect(status.trace != nil)
        #expect(await conditioner.status().trace == nil, "the whole interface plays nothing")
        let ifb = ShapingTarget(interface: "eth0").ifb
        let before = kernel.executed.count
        let deadline = Date().addingTimeInterval(20)
        var rates: [Bandwidth] = []
        while Date() < deadline, !rates.contains(LinkTrace.outageRate(lasting: 100)) {
            try await Task.sleep(for: .milliseconds(20))
            rates = kernel.executed.dropFirst(before).compactMap {
                guard case .changeClass(let device, let node) = $0, device == ifb else { return nil }
                return node.rate
            }
        }
        #expect(rates.contains(LinkTrace.outageRate(lasting: 100)), "the peer's class took the outage's rate: \(rates)")
        let touched = Set(kernel.executed.dropFirst(before).compactMap { step -> TrafficControlHandle? in
            if case .changeClass(_, let node) = step { return node.classID }
            return nil
        })
        #expect(touched.count == 1 && !touched.contains(ReservedHandles.profileClass), "only the peer's own class changes: \(touched)")
        _ = try await conditioner.deactivate(on: peer, by: TestDaemon.root)
    }

    @Test("a restarted daemon plays the stored trace again, and refuses one whose file changed")
    func restart() async throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state")
        let recorded = try Self.recorded(in: directory)
        let kernel = FakeKernel(interfaces: ["eth0"])
        let catalog = ProfileCatalog(entries: TestDaemon.profiles + [recorded])
        let first = TestDaemon.conditioner(kernel: kernel, stateDirectory: state.path, catalog: catalog)
        _ = try await first.activate("Recorded", by: TestDaemon.root)
        let stored = try String(contentsOf: state.appendingPathComponent("eth0.state.json"), encoding: .utf8)
        #expect(stored.contains("\"traceFile\""))
        #expect(stored.contains("\"traceFingerprint\""))
        #expect(stored.contains("\"version\" : 3"), "a daemon older than traces refuses the file")
        #expect(!stored.contains("\"bandwidthBitsPerSecond\" : 1200000"), "the rate of the moment is not stored")
        try await first.shutdown()

        // What `shutdown` removed, a crash would have left: the state file says what to bring back.
        try stored.write(to: state.appendingPathComponent("eth0.state.json"), atomically: true, encoding: .utf8)
        let second = TestDaemon.conditioner(kernel: kernel, stateDirectory: state.path, catalog: catalog)
        let beforeRecovery = kernel.executed.count
        try await second.recover()
        #expect(await second.status().profile?.name == "Recorded")
        #expect(await second.status().trace != nil)
        #expect(try await Self.waitForDownlinkRates([LinkTrace.outageRate(lasting: 100)], in: kernel, from: beforeRecovery))
        try await second.shutdown()

        try stored.write(to: state.appendingPathComponent("eth0.state.json"), atomically: true, encoding: .utf8)
        try "1\n2\n".write(toFile: recorded.profile.downlink.trace!.file, atomically: true, encoding: .utf8)
        let third = TestDaemon.conditioner(kernel: kernel, stateDirectory: state.path, catalog: catalog)
        try await third.recover()
        #expect(await third.status().profile == nil, "a trace file that changed is not played as the old one")
        try await third.shutdown()
    }
}
