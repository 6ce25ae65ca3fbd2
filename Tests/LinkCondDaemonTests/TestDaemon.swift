import ControlAPI
import LinkCondClient
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Failures
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import Profiles
import Sandboxes
import Shaping
import ShapingTestSupport
import Synchronization
import Testing

/// A conditioner on a model kernel with the shipped-like profiles, for tests without root.
enum TestDaemon {
    static let profiles: [ProfileEntry] = [
        ProfileEntry(
            profile: Profile(
                name: "Slow Net",
                downlink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
                uplink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
                dnsDelay: .milliseconds(200)
            ),
            file: "/profiles/slow-net.yaml", stem: "slow-net"
        ),
        ProfileEntry(
            profile: Profile(name: "Nasty Net", downlink: LinkConditions(loss: LossRate(percent: 90)), uplink: LinkConditions(loss: LossRate(percent: 90))),
            file: "/profiles/nasty-net.yaml", stem: "nasty-net"
        ),
        ProfileEntry(
            profile: Profile(name: "100% Loss", downlink: LinkConditions(loss: .total), uplink: LinkConditions(loss: .total)),
            file: "/profiles/100-percent-loss.yaml", stem: "100-percent-loss"
        ),
    ]

    static let problem = ProfileError(code: .badValue, file: "/profiles/broken.yaml", line: 4, field: "downlink.loss", message: "loss '120%' is out of range")

    static let root = Requester(uid: 0, gid: 0, pid: 100, user: "root", command: "linkcond activate")
    static let alice = Requester(uid: 1000, gid: 1000, pid: 200, groups: [27, 4242], user: "alice", command: "pytest -k offline")
    static let bob = Requester(uid: 1001, gid: 1001, pid: 300, groups: [27], user: "bob", command: "linkcond off")
    static let authorizer = Authorizer(groupName: "linkcond", groupID: 4242)

    static func conditioner(
        kernel: FakeKernel, stateDirectory: String? = nil, historyFile: String? = nil,
        catalog: ProfileCatalog = ProfileCatalog(entries: profiles, problems: [problem]), profileDirectories: [String] = [],
        profileFiles: ProfileFiles = ProfileFiles(directory: nil), eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(), namespaces: FakeNamespaces? = nil,
        sandboxes: (any SandboxPlumbing & Sendable)? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
        clock: WallClock = .system, resetter: FakeResetter? = nil
    ) -> Conditioner {
        Conditioner(
            engine: ShapingEngine(kernel: kernel, logger: .quiet),
            target: ShapingTarget(interface: "eth0"),
            planner: Planner(),
            catalog: catalog,
            profileDirectories: profileDirectories,
            profileFiles: profileFiles,
            scenarios: scenarios,
            eventLoop: eventLoop,
            stateDirectory: stateDirectory,
            historyFile: historyFile,
            namespaces: namespaces,
            sandboxes: sandboxes,
            resetter: resetter,
            clock: clock,
            logger: .quiet
        )
    }

    /// A conditioner whose leases live on `time`: its clock, and its event loop's timers.
    static func conditioner(kernel: FakeKernel, time: ManualTime, stateDirectory: String? = nil) -> Conditioner {
        conditioner(kernel: kernel, stateDirectory: stateDirectory, eventLoop: time.loop, clock: time.clock)
    }

    /// A unique socket path, short enough for `sockaddr_un`.
    static func socketPath() -> String {
        "/tmp/lc-test-\(UUID().uuidString.prefix(8)).sock"
    }

    /// A fresh directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The profile whose plan matches what the kernel has, object for object, filter for filter
    /// and value for value, or `nil` when there is no tree; throws when the tree is partial or
    /// matches no profile.
    static func conditionInKernel(_ kernel: FakeKernel, candidates: [ProfileEntry] = profiles) throws -> String? {
        let survey = try kernel.survey(ShapingTarget(interface: "eth0"))
        guard survey.hasLinkcondObjects else { return nil }
        for entry in candidates {
            let plan = Planner().plan(entry.profile, on: ShapingTarget(interface: "eth0"))
            guard survey.isComplete(for: plan) else { continue }
            let matches = [plan.uplink, plan.downlink].allSatisfy { tree in
                tree.classes.allSatisfy { kernel.htbClass($0.classID, on: tree.device) == $0 }
                    && tree.leaves.allSatisfy { kernel.qdisc($0.handle, on: tree.device)?.settings == $0.settings }
            }
            if matches { return entry.profile.name }
        }
        throw InconsistentTree(state: kernel.fullState)
    }

    struct InconsistentTree: Error, CustomStringConvertible {
        var state: String
        var description: String { "the kernel holds a tree that matches no profile:\n\(state)" }
    }
}

/// Time that passes only when a test moves it: the wall clock leases expire on, and an event loop
/// whose timers fire as it moves. A test of a lease's end then takes no real time, and no busy
/// machine can make it late. A lease's timer is set in whole milliseconds, rounded up so that it
/// never ends early: tests look for its end 1 ms after its time.
final class ManualTime: Sendable {
    let loop = NIOAsyncTestingEventLoop()
    private let date = Mutex(Date(timeIntervalSinceReferenceDate: 800_000_000))

    var clock: WallClock { WallClock { [self] in self.date.withLock { $0 } } }

    /// Moves the clock and the loop by `amount`: the timers due by then fire. Timers scheduled
    /// from off the loop reach it through its queue: it is run first, so that they count from
    /// the time they were set.
    func advance(by amount: Duration) async {
        await loop.run()
        let (seconds, attoseconds) = amount.components
        date.withLock { $0 = $0.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18) }
        await loop.advanceTime(by: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }

    /// Moves the clock alone, as time passing while no daemon runs.
    func advanceClock(by amount: Duration) {
        let (seconds, attoseconds) = amount.components
        date.withLock { $0 = $0.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18) }
    }
}

/// Whether `condition` becomes true while the tasks a fired timer started run: it is asked again
/// after each of up to 10 000 turns of the scheduler, not after any time.
func eventually(_ condition: () async throws -> Bool) async rethrows -> Bool {
    for _ in 0..<10_000 {
        if try await condition() { return true }
        await Task.yield()
    }
    return try await condition()
}

extension FakeKernel {
    /// Whether every step since the `mark`-th only changed objects in place: a tree re-adopted,
    /// not rebuilt.
    func changedInPlace(since mark: Int) -> Bool {
        executed[mark...].allSatisfy { step in
            switch step {
            case .changeClass, .changeQdisc, .replaceFilter: true
            default: false
            }
        }
    }
}

/// Expects the conditioner to refuse `command` for a reason of type `Reason`, and returns that
/// reason: its commands throw every refusal as a `ConditionsRefusal`.
@discardableResult
func expectRefusal<Reason: ConditionsError, Result>(
    _ reason: Reason.Type, sourceLocation: SourceLocation = #_sourceLocation, _ command: () async throws -> Result
) async -> Reason? {
    do {
        _ = try await command()
        Issue.record("expected a refusal for \(Reason.self), but the command succeeded", sourceLocation: sourceLocation)
    } catch let refusal as ConditionsRefusal {
        if let reason = refusal.reason as? Reason { return reason }
        Issue.record("expected a refusal for \(Reason.self), got \(type(of: refusal.reason)): \(refusal)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a ConditionsRefusal for \(Reason.self), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
