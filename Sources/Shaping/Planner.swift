import Netlink
import Profiles

/// Turns a profile into the tc tree that realises it. Pure: no kernel, no I/O.
///
/// The skeleton (which objects exist) depends only on the target and the exemptions, never on
/// the profile, so every switch between profiles is a change of values in place.
public struct Planner: Sendable {
    public var exemptions: Exemptions

    /// The rate of unshaped classes: far above any real NIC, so htb never limits them.
    public static let lineRate = Bandwidth.gbit(100)
    /// The rate assumed when sizing netem queues of an unlimited direction.
    static let assumedLinkRate = Bandwidth.gbit(1)
    /// How long a packet may wait for bandwidth beyond its delay before netem drops it.
    static let queueBudget = Delay.milliseconds(200)
    /// Largest Ethernet frame without FCS: the htb quantum and the packet size for queue sizing.
    static let framePacketBytes: UInt32 = 1514
    /// A small frame (a TCP ACK is 66 bytes): the packet size for sizing the delay line.
    static let smallestFrameBytes: UInt32 = 64
    /// Share of a shaped uplink guaranteed to DNS queries when bulk traffic saturates it.
    static let dnsShareDivisor: UInt64 = 10

    public init(exemptions: Exemptions = .default) {
        self.exemptions = exemptions
    }

    public func plan(_ profile: Profile, on target: ShapingTarget) -> TrafficPlan {
        TrafficPlan(
            target: target,
            uplink: tree(on: target.interface, conditions: profile.uplink, dnsDelay: profile.dnsDelay),
            downlink: tree(on: target.ifb, conditions: profile.downlink, dnsDelay: nil),
            ingressRedirects: [
                redirect(.ipv4, priority: ReservedHandles.IngressPriority.ipv4, to: target.ifb),
                redirect(.ipv6, priority: ReservedHandles.IngressPriority.ipv6, to: target.ifb),
            ]
        )
    }

    /// One direction's tree. `dnsDelay` is `nil` for the downlink, which has no DNS class.
    func tree(on device: String, conditions: LinkConditions, dnsDelay: Delay?) -> DirectionTree {
        let profileRate = conditions.bandwidth ?? Self.lineRate
        let bulkNetem = netem(conditions, extraDelay: .zero)

        var classes = [
            htbClass(ReservedHandles.exemptClass, rate: Self.lineRate),
            htbClass(ReservedHandles.profileClass, rate: profileRate),
        ]
        var leaves = [
            QdiscNode(parent: ReservedHandles.exemptClass, handle: ReservedHandles.exemptLeaf, settings: .pfifo(limitPackets: 1000)),
        ]
        if let dnsDelay {
            // Both children may borrow up to the profile's rate; their guaranteed rates add up
            // to it, so together they never exceed it.
            let dnsRate = Bandwidth(bitsPerSecond: max(profileRate.bitsPerSecond / Self.dnsShareDivisor, 8))
            let bulkRate = Bandwidth(bitsPerSecond: profileRate.bitsPerSecond - dnsRate.bitsPerSecond)
            classes.append(htbClass(ReservedHandles.bulkClass, parent: ReservedHandles.profileClass, rate: bulkRate, ceil: profileRate))
            classes.append(htbClass(ReservedHandles.dnsClass, parent: ReservedHandles.profileClass, rate: dnsRate, ceil: profileRate))
            leaves.append(QdiscNode(parent: ReservedHandles.bulkClass, handle: ReservedHandles.bulkLeaf, settings: .netem(bulkNetem)))
            leaves.append(QdiscNode(parent: ReservedHandles.dnsClass, handle: ReservedHandles.dnsLeaf, settings: .netem(netem(conditions, extraDelay: dnsDelay))))
        } else {
            classes.append(htbClass(ReservedHandles.bulkClass, parent: ReservedHandles.profileClass, rate: profileRate))
            leaves.append(QdiscNode(parent: ReservedHandles.bulkClass, handle: ReservedHandles.bulkLeaf, settings: .netem(bulkNetem)))
        }

        return DirectionTree(
            device: device,
            root: QdiscNode(parent: .root, handle: ReservedHandles.root, settings: .htb(defaultClass: ReservedHandles.exemptClass)),
            classes: classes,
            leaves: leaves,
            filters: filters(withDNS: dnsDelay != nil)
        )
    }

    // MARK: Classes and leaves

    func htbClass(
        _ classID: TrafficControlHandle, parent: TrafficControlHandle = ReservedHandles.root,
        rate: Bandwidth, ceil: Bandwidth? = nil
    ) -> ClassNode {
        let ceil = ceil ?? rate
        return ClassNode(
            parent: parent, classID: classID, rate: rate, ceil: ceil,
            burstBytes: Self.burstBytes(for: max(rate, ceil)), quantumBytes: Self.framePacketBytes
        )
    }

    /// Ten milliseconds' worth of traffic, and never less than one full frame plus headroom:
    /// smaller buckets cap htb below its rate at high speeds, a bucket under the MTU stalls
    /// full-size packets.
    static func burstBytes(for rate: Bandwidth) -> UInt32 {
        let tenMilliseconds = rate.bytesPerSecond / 100
        return UInt32(clamping: max(tenMilliseconds, 1600))
    }

    func netem(_ conditions: LinkConditions, extraDelay: Delay) -> NetemSettings {
        NetemSettings(
            delay: conditions.delay + extraDelay,
            jitter: conditions.jitter,
            loss: conditions.loss,
            limitPackets: Self.queueLimit(conditions, extraDelay: extraDelay)
        )
    }

    /// Packets in the delay line at the link's rate, counted as the smallest frames (a real link
    /// holds any number of packets in flight, and ACKs, DNS or VoIP at a high packet rate must
    /// not overflow it), plus `queueBudget` of full-size frames queued behind a shaped link.
    /// Unlimited directions assume a 1 Gbit/s link and keep netem's default floor.
    static func queueLimit(_ conditions: LinkConditions, extraDelay: Delay) -> UInt32 {
        let rate = Double((conditions.bandwidth ?? assumedLinkRate).bytesPerSecond)
        let delayLine = rate * (conditions.delay + conditions.jitter + extraDelay).seconds / Double(smallestFrameBytes)
        let queue = conditions.bandwidth == nil ? 0 : rate * queueBudget.seconds / Double(framePacketBytes)
        let floor: Double = conditions.bandwidth == nil ? 1000 : 32
        return UInt32(min(max((delayLine + queue).rounded(.up), floor), 1_000_000))
    }

    // MARK: Filters

    func filters(withDNS: Bool) -> [FilterNode] {
        var builder = FilterListBuilder(parent: ReservedHandles.root)
        let exempt = FilterNode.Target.classify(ReservedHandles.exemptClass)

        builder.priority(ReservedHandles.Priority.exemptIPv4, .ipv4) { add in
            add(PacketMatch.ipv4Port(67, transport: 17, .destination), exempt, "exempt DHCP to server")
            add(PacketMatch.ipv4Port(68, transport: 17, .destination), exempt, "exempt DHCP to client")
            for port in exemptions.ports {
                add(PacketMatch.ipv4Port(port.port, transport: port.transport.ipProtocol, .source), exempt, "exempt \(port) source")
                add(PacketMatch.ipv4Port(port.port, transport: port.transport.ipProtocol, .destination), exempt, "exempt \(port) destination")
            }
            for network in exemptions.networks where network.family == .ipv4 {
                add(PacketMatch.ipv4Network(network, .source), exempt, "exempt from \(network)")
                add(PacketMatch.ipv4Network(network, .destination), exempt, "exempt to \(network)")
            }
        }
        builder.priority(ReservedHandles.Priority.exemptIPv6, .ipv6) { add in
            for (index, keys) in PacketMatch.neighbourDiscovery.enumerated() {
                add(keys, exempt, "exempt neighbour discovery \(index + 1)")
            }
            add(PacketMatch.ipv6Port(546, transport: 17, .destination), exempt, "exempt DHCPv6 to client")
            add(PacketMatch.ipv6Port(547, transport: 17, .destination), exempt, "exempt DHCPv6 to server")
            for port in exemptions.ports {
                add(PacketMatch.ipv6Port(port.port, transport: port.transport.ipProtocol, .source), exempt, "exempt \(port) source")
                add(PacketMatch.ipv6Port(port.port, transport: port.transport.ipProtocol, .destination), exempt, "exempt \(port) destination")
            }
            for network in exemptions.networks where network.family == .ipv6 {
                add(PacketMatch.ipv6Network(network, .source), exempt, "exempt from \(network)")
                add(PacketMatch.ipv6Network(network, .destination), exempt, "exempt to \(network)")
            }
        }
        if withDNS {
            let dns = FilterNode.Target.classify(ReservedHandles.dnsClass)
            builder.priority(ReservedHandles.Priority.dnsIPv4, .ipv4) { add in
                add(PacketMatch.ipv4Port(53, transport: 17, .destination), dns, "DNS query udp/53")
                add(PacketMatch.ipv4Port(53, transport: 6, .destination), dns, "DNS query tcp/53")
            }
            builder.priority(ReservedHandles.Priority.dnsIPv6, .ipv6) { add in
                add(PacketMatch.ipv6Port(53, transport: 17, .destination), dns, "DNS query udp/53")
                add(PacketMatch.ipv6Port(53, transport: 6, .destination), dns, "DNS query tcp/53")
            }
        }
        let bulk = FilterNode.Target.classify(ReservedHandles.bulkClass)
        builder.priority(ReservedHandles.Priority.allIPv4, .ipv4) { add in add([], bulk, "all IPv4") }
        builder.priority(ReservedHandles.Priority.allIPv6, .ipv6) { add in add([], bulk, "all IPv6") }
        return builder.filters
    }

    func redirect(_ protocolType: EthernetProtocol, priority: UInt16, to ifb: String) -> FilterNode {
        FilterNode(
            parent: ReservedHandles.ingress, priority: priority, protocolType: protocolType,
            keys: [], target: .redirect(device: ifb),
            purpose: "redirect \(protocolType) ingress to \(ifb)"
        )
    }
}

/// Collects the filters of each priority, in the order they are evaluated.
private struct FilterListBuilder {
    let parent: TrafficControlHandle
    var filters: [FilterNode] = []

    typealias Add = ([U32Key], FilterNode.Target, String) -> Void

    mutating func priority(_ priority: UInt16, _ protocolType: EthernetProtocol, _ body: (Add) -> Void) {
        var added: [FilterNode] = []
        body { keys, target, purpose in
            added.append(FilterNode(
                parent: parent, priority: priority, protocolType: protocolType,
                keys: keys, target: target, purpose: purpose
            ))
        }
        filters += added
    }
}
