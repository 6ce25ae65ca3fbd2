import Netlink
import Profiles
@testable import Shaping

/// Profiles with the values of the shipped files, so these tests need no files.
enum Fixtures {
    static let slowNet = Profile(
        name: "Slow Net",
        downlink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
        uplink: LinkConditions(bandwidth: .kbit(32), delay: .milliseconds(100)),
        dnsDelay: .milliseconds(200)
    )
    static let nastyNet = Profile(
        name: "Nasty Net",
        downlink: LinkConditions(loss: LossRate(percent: 90)),
        uplink: LinkConditions(loss: LossRate(percent: 90))
    )
    static let blackHole = Profile(name: "Black Hole", downlink: LinkConditions(loss: .total))
    static let lte = Profile(
        name: "LTE",
        downlink: LinkConditions(bandwidth: .mbit(50), delay: .milliseconds(50)),
        uplink: LinkConditions(bandwidth: .mbit(10), delay: .milliseconds(65))
    )
    static let jittery = Profile(
        name: "Jittery",
        downlink: LinkConditions(bandwidth: .mbit(1), delay: .milliseconds(80), jitter: .milliseconds(20), loss: LossRate(percent: 1)),
        uplink: .unshaped,
        dnsDelay: .seconds(3)
    )
    static let all = [slowNet, nastyNet, blackHole, lte, jittery]

    static let target = ShapingTarget(interface: "eth0")

    static func plan(_ profile: Profile, exemptions: Exemptions = .default) -> TrafficPlan {
        Planner(exemptions: exemptions).plan(profile, on: target)
    }
}

extension DirectionTree {
    func htbClass(_ classID: TrafficControlHandle) -> ClassNode? {
        classes.first { $0.classID == classID }
    }

    func netem(_ handle: TrafficControlHandle) -> NetemSettings? {
        guard case .netem(let settings) = leaves.first(where: { $0.handle == handle })?.settings else { return nil }
        return settings
    }

    /// The packets the queue below the netem `leaf` holds, if it has one.
    func queueLimit(below leaf: TrafficControlHandle) -> UInt32? {
        guard let queue = leaves.first(where: { $0.parent == ReservedHandles.queueParent(of: leaf) }),
              case .pfifo(let limit) = queue.settings
        else { return nil }
        return limit
    }
}
