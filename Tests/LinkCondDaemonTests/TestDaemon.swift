import ControlAPI
import ControlClient
import Foundation
@testable import LinkCondDaemon
import Logging
import NIOPosix
import Profiles
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

    static func conditioner(kernel: FakeKernel) -> Conditioner {
        Conditioner(
            engine: ShapingEngine(kernel: kernel, logger: .quiet),
            target: ShapingTarget(interface: "eth0"),
            planner: Planner(),
            catalog: ProfileCatalog(entries: profiles, problems: [problem]),
            logger: .quiet
        )
    }

    /// A unique socket path, short enough for `sockaddr_un`.
    static func socketPath() -> String {
        "/tmp/lc-test-\(UUID().uuidString.prefix(8)).sock"
    }
}
