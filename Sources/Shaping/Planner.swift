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
    /// How long a packet may wait for bandwidth beyond its delay before its queue drops it.
    static let queueBudget = Delay.milliseconds(200)
    /// The fewest packets a netem leaf holds: its queue's packets count against its limit, and
    /// packets that are due wait in its delay line until the class's rate takes them into the
    /// queue, seconds in a trace's outage.
    static let netemLimitFloor: UInt32 = 1000
    /// Largest Ethernet frame without FCS: the htb quantum and the packet size for queue sizing.
    static let framePacketBytes: UInt32 = 1514
    /// A small frame (a TCP ACK is 66 bytes): the packet size for sizing the delay line.
    static let smallestFrameBytes: UInt32 = 64
    /// Share of a shaped uplink guaranteed to DNS queries when bulk traffic saturates it.
    static let dnsShareDivisor: UInt64 = 10

    public init(exemptions: Exemptions = .default) {
        self.exemptions = exemptions
    }

    /// The tree of a target with one whole-interface condition.
    public func plan(_ profile: Profile, on target: ShapingTarget) -> TrafficPlan {
        plan(on: target, whole: profile, matches: [])!
    }

    /// The tree of a target with every condition on it: the whole-interface one (`whole`) and
    /// those with a match. `nil` when there is none: the target has no tree.
    ///
    /// Each condition's objects depend on its own slot and profile alone, so adding, switching
    /// or removing one leaves every other object of the tree as it is.
    public func plan(on target: ShapingTarget, whole: Profile?, matches: [MatchedCondition]) -> TrafficPlan? {
        guard whole != nil || !matches.isEmpty else { return nil }
        let matches = matches.sorted { $0.slot < $1.slot }
        return TrafficPlan(
            target: target,
            uplink: tree(
                on: target.interface, whole: whole.map { ($0.uplink, $0.dnsDelay) },
                matches: matches.map { ($0.slot, $0.match, $0.match.conditions(of: $0.profile, egress: true)) }, peerAs: .destination
            ),
            downlink: tree(
                on: target.ifb, whole: whole.map { ($0.downlink, nil) },
                matches: matches.map { ($0.slot, $0.match, $0.match.conditions(of: $0.profile, egress: false)) }, peerAs: .source
            ),
            ingressRedirects: ReservedHandles.IngressPriority.redirects.map {
                redirect($0.protocolType, priority: $0.priority, to: target.ifb)
            }
        )
    }

    typealias WholeDirection = (conditions: LinkConditions, dnsDelay: Delay?)
    typealias MatchedDirection = (slot: UInt16, match: PeerMatch, conditions: LinkConditions)

    /// One direction's tree. A whole-interface `dnsDelay` is `nil` on the downlink, which has no
    /// DNS class; `peerAs` is where a matched peer's address and port are in that direction's
    /// packets.
    func tree(on device: String, whole: WholeDirection?, matches: [MatchedDirection], peerAs: PacketMatch.Direction) -> DirectionTree {
        var classes = [htbClass(ReservedHandles.exemptClass, rate: Self.lineRate)]
        var leaves = [
            QdiscNode(parent: ReservedHandles.exemptClass, handle: ReservedHandles.exemptLeaf, settings: .pfifo(limitPackets: 1000)),
        ]
        var filters = exemptionFilters()
        if let whole {
            let (wholeClasses, wholeLeaves) = wholeInterfaceObjects(whole.conditions, dnsDelay: whole.dnsDelay)
            classes += wholeClasses
            leaves += wholeLeaves
            filters += wholeInterfaceFilters(withDNS: whole.dnsDelay != nil)
        }
        for matched in matches {
            let (matchClass, matchLeaves) = matchObjects(slot: matched.slot, conditions: matched.conditions)
            classes.append(matchClass)
            leaves += matchLeaves
            filters += matchFilters(matched, peerAs: peerAs)
        }
        return DirectionTree(
            device: device,
            root: QdiscNode(parent: .root, handle: ReservedHandles.root, settings: .htb(defaultClass: ReservedHandles.exemptClass)),
            classes: classes,
            leaves: leaves,
            filters: filters.sorted { ($0.priority, $0.flowerHandle ?? 0) < ($1.priority, $1.flowerHandle ?? 0) }
        )
    }

    /// A matched condition's class, leaf and queue in one direction: all that its profile
    /// decides, since its filters depend on its match alone.
    func matchObjects(slot: UInt16, conditions: LinkConditions) -> (ClassNode, [QdiscNode]) {
        let classID = ReservedHandles.matchClass(slot)
        return (
            htbClass(classID, rate: conditions.bandwidth ?? Self.lineRate),
            leaf(ReservedHandles.matchLeaf(slot), in: classID, conditions, extraDelay: .zero)
        )
    }

    /// `plan` with `matched`'s profile in place of the one its slot had: the same plan as
    /// `plan(on:whole:matches:)` with the new profile, made by replacing the slot's class, leaf
    /// and queue in each direction, so at a cost that does not grow with the number of conditions.
    /// `nil` when the plan has no such slot.
    public func replacingProfile(of matched: MatchedCondition, in plan: TrafficPlan) -> TrafficPlan? {
        var plan = plan
        let uplink = matchObjects(slot: matched.slot, conditions: matched.match.conditions(of: matched.profile, egress: true))
        let downlink = matchObjects(slot: matched.slot, conditions: matched.match.conditions(of: matched.profile, egress: false))
        guard plan.uplink.replace(uplink), plan.downlink.replace(downlink) else { return nil }
        return plan
    }

    /// The whole-interface condition's classes and leaves: a parent at the profile's rate, with
    /// its bulk traffic and, on the uplink, its DNS queries below.
    func wholeInterfaceObjects(_ conditions: LinkConditions, dnsDelay: Delay?) -> ([ClassNode], [QdiscNode]) {
        let profileRate = conditions.bandwidth ?? Self.lineRate
        var classes = [htbClass(ReservedHandles.profileClass, rate: profileRate)]
        var leaves = leaf(ReservedHandles.bulkLeaf, in: ReservedHandles.bulkClass, conditions, extraDelay: .zero)
        if let dnsDelay {
            let (bulkRate, dnsRate) = Self.childRates(of: profileRate, traceDriven: conditions.trace != nil)
            classes.append(htbClass(ReservedHandles.bulkClass, parent: ReservedHandles.profileClass, rate: bulkRate, ceil: profileRate))
            classes.append(htbClass(ReservedHandles.dnsClass, parent: ReservedHandles.profileClass, rate: dnsRate, ceil: profileRate))
            leaves += leaf(ReservedHandles.dnsLeaf, in: ReservedHandles.dnsClass, conditions, extraDelay: dnsDelay)
        } else {
            classes.append(htbClass(ReservedHandles.bulkClass, parent: ReservedHandles.profileClass, rate: profileRate))
        }
        return (classes, leaves)
    }

    /// The guaranteed rates of the bulk and DNS classes below a whole interface's `profileRate`.
    ///
    /// Both may borrow up to the profile's rate; their guaranteed rates add up to it, so together
    /// they never exceed it, and DNS queries keep a tenth under a saturating transfer. Not for a
    /// trace: its rate steps down to an outage's one packet over seconds, and a class that
    /// borrowed at that rate would leave its lender owing seconds, paid back only from what the
    /// borrower leaves unused. There nothing borrows: each child has the whole rate as its own.
    static func childRates(of profileRate: Bandwidth, traceDriven: Bool) -> (bulk: Bandwidth, dns: Bandwidth) {
        guard !traceDriven else { return (profileRate, profileRate) }
        let dnsRate = Bandwidth(bitsPerSecond: max(profileRate.bitsPerSecond / Self.dnsShareDivisor, 8))
        return (Bandwidth(bitsPerSecond: profileRate.bitsPerSecond - dnsRate.bitsPerSecond), dnsRate)
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

    /// A leaf class's netem and, below it, the queue where packets wait for the class's rate.
    ///
    /// netem counts the packets its loss drops and those its child refuses as its own drops;
    /// the child counts only the latter, so the two are told apart by subtraction.
    func leaf(_ handle: TrafficControlHandle, in classID: TrafficControlHandle, _ conditions: LinkConditions, extraDelay: Delay) -> [QdiscNode] {
        let limits = Self.queueLimits(conditions, extraDelay: extraDelay)
        let queue = ReservedHandles.queue(below: handle)!
        return [
            QdiscNode(parent: classID, handle: handle, settings: .netem(netem(conditions, extraDelay: extraDelay, limitPackets: limits.netem))),
            QdiscNode(parent: ReservedHandles.queueParent(of: handle), handle: queue, settings: .pfifo(limitPackets: limits.queue)),
        ]
    }

    func netem(_ conditions: LinkConditions, extraDelay: Delay, limitPackets: UInt32) -> NetemSettings {
        var impairments = conditions.impairments
        // The queue is the leaf's child; the rest is netem's own.
        impairments.queue = nil
        return NetemSettings(
            delay: conditions.delay + extraDelay,
            jitter: conditions.jitter,
            loss: conditions.loss,
            limitPackets: limitPackets,
            impairments: impairments
        )
    }

    /// The queue's size, and netem's limit above it, in packets.
    ///
    /// A profile's own `queue` is kept exactly, in full-size frames: the packets that wait
    /// for the rate, whatever the delay line holds. Without one, the queue holds what netem's
    /// limit alone held before it had a queue below it: the packets in the delay line at the
    /// link's rate, counted as the smallest frames (a real link holds any number of packets in
    /// flight, and ACKs, DNS or VoIP at a high packet rate must not overflow it), plus
    /// `queueBudget` of full-size frames behind a shaped link. Unlimited directions assume a
    /// 1 Gbit/s link and keep netem's default floor.
    ///
    /// netem's limit counts its queue's packets too (`sch->q.qlen`), so it is the queue plus
    /// its delay line, and at least `netemLimitFloor`: only the queue should drop for room.
    ///
    /// A trace-driven direction is sized at its trace's peak, whatever its rate now: the leaf
    /// then stays as it is while the daemon steps the class's rate.
    static func queueLimits(_ conditions: LinkConditions, extraDelay: Delay) -> (netem: UInt32, queue: UInt32) {
        let sizingRate = conditions.trace?.peakCapacity ?? conditions.bandwidth
        let rate = Double((sizingRate ?? assumedLinkRate).bytesPerSecond)
        let delayLine = rate * (conditions.delay + conditions.jitter + extraDelay).seconds / Double(smallestFrameBytes)
        let queue: Double
        if let ownQueue = conditions.impairments.queue, sizingRate != nil {
            let frames: Double = switch ownQueue {
            case .packets(let count): Double(count)
            case .bytes(let count): Double(count) / Double(framePacketBytes)
            case .milliseconds(let count): rate * Double(count) / 1000 / Double(framePacketBytes)
            }
            queue = min(max(frames.rounded(.up), 1), 1_000_000)
        } else {
            let budget = sizingRate == nil ? 0 : rate * queueBudget.seconds / Double(framePacketBytes)
            let floor: Double = sizingRate == nil ? 1000 : 32
            queue = min(max((delayLine + budget).rounded(.up), floor), 1_000_000)
        }
        let netem = min(max((queue + delayLine).rounded(.up), Double(netemLimitFloor)), 2_000_000)
        return (UInt32(netem), UInt32(queue))
    }

    // MARK: Filters

    func exemptionFilters() -> [FilterNode] {
        var builder = FilterListBuilder(parent: ReservedHandles.root, priority: ReservedHandles.Priority.exempt)
        let exempt = FilterNode.Target.classify(ReservedHandles.exemptClass)
        builder.add(PacketMatch.port(67, .udp, .ipv4, .destination), exempt, "exempt DHCP to server")
        builder.add(PacketMatch.port(68, .udp, .ipv4, .destination), exempt, "exempt DHCP to client")
        for (index, key) in PacketMatch.neighbourDiscovery.enumerated() {
            builder.add(key, exempt, "exempt neighbour discovery \(index + 1)")
        }
        builder.add(PacketMatch.port(546, .udp, .ipv6, .destination), exempt, "exempt DHCPv6 to client")
        builder.add(PacketMatch.port(547, .udp, .ipv6, .destination), exempt, "exempt DHCPv6 to server")
        for port in exemptions.ports {
            for family in [EthernetProtocol.ipv4, .ipv6] {
                builder.add(PacketMatch.port(port.port, port.transport, family, .source), exempt, "exempt \(port) source")
                builder.add(PacketMatch.port(port.port, port.transport, family, .destination), exempt, "exempt \(port) destination")
            }
        }
        for network in exemptions.networks {
            builder.add(PacketMatch.network(network, .source), exempt, "exempt from \(network)")
            builder.add(PacketMatch.network(network, .destination), exempt, "exempt to \(network)")
        }
        return builder.filters
    }

    func wholeInterfaceFilters(withDNS: Bool) -> [FilterNode] {
        var filters: [FilterNode] = []
        if withDNS {
            var builder = FilterListBuilder(parent: ReservedHandles.root, priority: ReservedHandles.Priority.dns)
            let dns = FilterNode.Target.classify(ReservedHandles.dnsClass)
            for family in [EthernetProtocol.ipv4, .ipv6] {
                builder.add(PacketMatch.port(53, .udp, family, .destination), dns, "DNS query udp/53")
                builder.add(PacketMatch.port(53, .tcp, family, .destination), dns, "DNS query tcp/53")
            }
            filters += builder.filters
        }
        var builder = FilterListBuilder(parent: ReservedHandles.root, priority: ReservedHandles.Priority.all)
        let bulk = FilterNode.Target.classify(ReservedHandles.bulkClass)
        builder.add(PacketMatch.all(.ipv4), bulk, "all IPv4")
        builder.add(PacketMatch.all(.ipv6), bulk, "all IPv6")
        return filters + builder.filters
    }

    /// A matched condition's filters, each at the priority of its specificity, with handles of
    /// its slot's range.
    func matchFilters(_ matched: MatchedDirection, peerAs: PacketMatch.Direction) -> [FilterNode] {
        let target = FilterNode.Target.classify(ReservedHandles.matchClass(matched.slot))
        let handles = ReservedHandles.matchFilterHandles(matched.slot)
        return matched.match.keys(peerAs: peerAs).prefix(handles.count - 1).enumerated().map { offset, entry in
            FilterNode(
                parent: ReservedHandles.root,
                priority: ReservedHandles.Priority.matches.upperBound - UInt16(entry.specificity),
                protocolType: .all,
                classifier: .flower(handle: handles.lowerBound + UInt32(offset) + 1, entry.key),
                target: target,
                purpose: "\(peerAs == .destination ? "to" : "from") \(matched.match.isDevice ? "" : "peer ")\(matched.match)"
            )
        }
    }

    func redirect(_ protocolType: EthernetProtocol, priority: UInt16, to ifb: String) -> FilterNode {
        FilterNode(
            parent: ReservedHandles.ingress, priority: priority, protocolType: protocolType,
            classifier: .u32([]), target: .redirect(device: ifb),
            purpose: "redirect \(protocolType) ingress to \(ifb)"
        )
    }
}

/// Numbers the flower filters of one priority from handle 1, in the order they are added.
private struct FilterListBuilder {
    let parent: TrafficControlHandle
    let priority: UInt16
    var filters: [FilterNode] = []

    mutating func add(_ key: FlowerKey, _ target: FilterNode.Target, _ purpose: String) {
        filters.append(FilterNode(
            parent: parent, priority: priority, protocolType: .all,
            classifier: .flower(handle: UInt32(filters.count + 1), key), target: target, purpose: purpose
        ))
    }
}
