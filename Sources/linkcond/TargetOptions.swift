import ArgumentParser
import ControlAPI

/// `--interface`, `--netns`, `--pid`, `--to`: which condition a command is about. Without them,
/// the daemon's own interface.
struct TargetOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The interface whose condition this is about; default: the one linkcondd was started for. Each interface has a condition of its own.",
        valueName: "name"
    ))
    var interface: String?

    @Option(help: ArgumentHelp(
        "The interface is in this network namespace of 'ip netns' (/run/netns/NAME), not in linkcondd's; without --interface, the one its default route leaves by.",
        valueName: "name"
    ))
    var netns: String?

    @Option(help: ArgumentHelp(
        "The interface is in the network namespace of this process, such as a container's ('docker inspect -f {{.State.Pid}} NAME'); without --interface, the one its default route leaves by (eth0 in a Docker container).",
        valueName: "pid"
    ))
    var pid: String?

    @Option(help: ArgumentHelp(
        "Only the traffic exchanged with this peer: an address, a network, a host name or '*', with an optional port and transport (10.0.0.5, 10.0.0.0/8, api.example.com:443, [2001:db8::1]:443, *:53/udp). A host name is looked up once, when its condition is made; status lists its addresses. Each peer has a condition of its own; the rest of the interface keeps its own. A loopback address with a port (127.0.0.1:8080, [::1]:8080) is a local server's, conditioned on lo.",
        valueName: "peer"
    ))
    var to: String?

    @Option(help: ArgumentHelp(
        "On a gateway: only the traffic of this device behind it, by its address or network (192.168.50.10, fd00:50::/64); its uplink is what it sends. Each device has a condition of its own.",
        valueName: "address"
    ))
    var device: String?

    func validate() throws {
        _ = try conditionID()
    }

    /// The condition's id, as the daemon's paths take it; `nil` for the default condition.
    var condition: String? {
        (try? conditionID())?.description
    }

    private func conditionID() throws -> ConditionID? {
        if netns != nil && pid != nil {
            throw ValidationError("give --netns or --pid, not both")
        }
        var namespace: NetworkNamespaceReference?
        if let netns {
            if let problem = NetworkNamespaceReference.problem(name: netns) {
                throw ValidationError("--netns \(netns): \(problem)")
            }
            namespace = .named(netns)
        } else if let pid {
            switch NetworkNamespaceReference.pid(parsing: Substring(pid)) {
            case .success(let number): namespace = .process(number)
            case .failure(let error): throw ValidationError("--pid \(error)")
            }
        }
        if to != nil && device != nil {
            throw ValidationError("give --to or --device, not both: a condition is on a peer or on a device behind this gateway")
        }
        var peer: PeerSpec?
        if let to {
            do {
                peer = try PeerSpec(parsing: to)
            } catch {
                throw ValidationError("--to \(error)")
            }
        }
        if let device {
            do {
                peer = try PeerSpec(parsing: PeerSpec.devicePrefix + device)
            } catch {
                throw ValidationError("--device \(error)")
            }
        }
        guard let interface else {
            // The daemon fills in the interface: its own for `@PEER`, the default route's in a namespace.
            if namespace == nil && peer == nil { return nil }
            return ConditionID(interface: "", namespace: namespace, peer: peer)
        }
        if let problem = InterfaceName.problem(interface) {
            throw ValidationError("--interface \(interface): \(problem)")
        }
        return ConditionID(interface: interface, namespace: namespace, peer: peer)
    }
}
