import ControlAPI
import LinkCondClient
import Foundation
@testable import LinkCondDaemon
import Logging
import NIOCore
import NIOPosix
import Profiles
import Sandboxes
import Shaping
import ShapingTestSupport

/// A conditioner on a model kernel with the shipped-like profiles, for tests without root.
enum TestDaemon {
    static let profiles: [CatalogEntry] = [
        CatalogEntry(
            profile: Profile(
                name: "Slow Net",
                downlink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
                uplink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
                dnsDelay: .milliseconds(200)
            ),
            file: "/profiles/slow-net.yaml", stem: "slow-net"
        ),
        CatalogEntry(
            profile: Profile(name: "Nasty Net", downlink: LinkConditions(loss: LossRate(percent: 90)), uplink: LinkConditions(loss: LossRate(percent: 90))),
            file: "/profiles/nasty-net.yaml", stem: "nasty-net"
        ),
        CatalogEntry(
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
        eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(), namespaces: FakeNamespaces? = nil,
        sandboxes: (any SandboxPlumbing & Sendable)? = nil, scenarios: ScenarioCatalog = ScenarioCatalog()
    ) -> Conditioner {
        Conditioner(
            engine: ShapingEngine(kernel: kernel, logger: .quiet),
            target: ShapingTarget(interface: "eth0"),
            planner: Planner(),
            catalog: catalog,
            profileDirectories: profileDirectories,
            scenarios: scenarios,
            eventLoop: eventLoop,
            stateDirectory: stateDirectory,
            historyFile: historyFile,
            namespaces: namespaces,
            sandboxes: sandboxes,
            logger: .quiet
        )
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
    static func conditionInKernel(_ kernel: FakeKernel, candidates: [CatalogEntry] = profiles) throws -> String? {
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
