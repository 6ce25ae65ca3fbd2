import Conditions
import ServiceLifecycle

/// A container's namespace ends without telling anyone: every second, the conditions in other
/// namespaces are checked for theirs (a stat of a file each, no netlink). Without such a
/// condition nothing is checked and no timer runs, so that an idle daemon never wakes for it.
struct NamespaceWatch: Service, CustomStringConvertible {
    let conditioner: Conditioner
    var description: String { "the namespace watch" }

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await conditioner.untilConditionsInOtherNamespaces()
                do {
                    try await conditioner.eventLoop.sleep(for: .seconds(1))
                } catch {
                    return
                }
                await conditioner.endConditionsInVanishedNamespaces()
            }
        }
    }
}
