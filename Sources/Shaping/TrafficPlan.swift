import Netlink
import Profiles

/// The complete tc tree for one profile on one interface: a pure value, built by `Planner`,
/// compared and diffed without a kernel, and applied by `ShapingEngine`.
public struct TrafficPlan: Hashable, Sendable {
    public var target: ShapingTarget
    /// Egress of the interface.
    public var uplink: DirectionTree
    /// Egress of the IFB, which receives the interface's ingress traffic.
    public var downlink: DirectionTree
    /// Filters on the interface's ingress qdisc that steal IP traffic into the IFB.
    public var ingressRedirects: [FilterNode]

    /// Two plans have the same skeleton when they differ in values only, so one can be turned
    /// into the other by changing objects in place.
    public func hasSameSkeleton(as other: TrafficPlan) -> Bool {
        target == other.target
            && uplink.skeleton == other.uplink.skeleton
            && downlink.skeleton == other.downlink.skeleton
            && ingressRedirects == other.ingressRedirects
    }
}

/// An htb root with its classes, leaf qdiscs and filters, on one device.
public struct DirectionTree: Hashable, Sendable {
    public var device: String
    public var root: QdiscNode
    /// Parents before children.
    public var classes: [ClassNode]
    /// Each leaf class's qdisc, followed by the queue below it, if any: parents before children.
    public var leaves: [QdiscNode]
    /// In priority order.
    public var filters: [FilterNode]

    /// Everything but the values that switching profiles may change.
    var skeleton: [String] {
        [root.identity] + classes.map(\.identity) + leaves.map(\.identity) + filters.map(\.identity)
    }
}

/// A qdisc to create: where it hangs and what it does.
public struct QdiscNode: Hashable, Sendable {
    public var parent: TrafficControlHandle
    public var handle: TrafficControlHandle
    public var settings: QdiscSettings

    var identity: String { "qdisc \(settings.kind) \(handle) parent \(parent)" }
}

/// Qdisc parameters in human units; encoded for the kernel only at the edge.
public enum QdiscSettings: Hashable, Sendable {
    case htb(defaultClass: TrafficControlHandle)
    case netem(NetemSettings)
    case pfifo(limitPackets: UInt32)
    case ingress

    public var kind: String {
        switch self {
        case .htb: return "htb"
        case .netem: return "netem"
        case .pfifo: return "pfifo"
        case .ingress: return "ingress"
        }
    }
}

/// What netem does to the packets of one class.
public struct NetemSettings: Hashable, Sendable {
    public var delay: Delay
    public var jitter: Delay
    public var loss: LossRate
    /// The packets netem holds, its queue's included: its delay line and the queue below it
    /// (`Planner.queueLimits`), so that the queue, not netem, drops for room.
    public var limitPackets: UInt32
    /// Correlations, bursts, duplication, corruption, reordering, the jitter's shape; the
    /// queue's size is the pfifo's below netem.
    public var impairments: Impairments = Impairments()

    public init(delay: Delay, jitter: Delay, loss: LossRate, limitPackets: UInt32, impairments: Impairments = Impairments()) {
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.limitPackets = limitPackets
        self.impairments = impairments
    }
}

/// An htb class.
public struct ClassNode: Hashable, Sendable {
    public var parent: TrafficControlHandle
    public var classID: TrafficControlHandle
    public var rate: Bandwidth
    public var ceil: Bandwidth
    public var burstBytes: UInt32
    public var quantumBytes: UInt32

    var identity: String { "class \(classID) parent \(parent)" }
}

/// A filter and what it is for.
public struct FilterNode: Hashable, Sendable, CustomStringConvertible {
    public enum Target: Hashable, Sendable {
        case classify(TrafficControlHandle)
        /// Redirect to the egress of the named device.
        case redirect(device: String)
    }

    /// How the filter picks packets.
    public enum Classifier: Hashable, Sendable {
        /// u32 keys at fixed offsets: only the ingress redirects, which match every packet of
        /// their protocol, use it.
        case u32([U32Key])
        /// flower, with a handle linkcond chooses so the filter can be replaced and deleted alone.
        case flower(handle: UInt32, FlowerKey)
    }

    /// The qdisc the filter hangs from.
    public var parent: TrafficControlHandle
    public var priority: UInt16
    public var protocolType: EthernetProtocol
    public var classifier: Classifier
    public var target: Target
    /// For people reading logs: `exempt tcp/22 source`.
    public var purpose: String

    public init(
        parent: TrafficControlHandle, priority: UInt16, protocolType: EthernetProtocol, classifier: Classifier,
        target: Target, purpose: String
    ) {
        self.parent = parent
        self.priority = priority
        self.protocolType = protocolType
        self.classifier = classifier
        self.target = target
        self.purpose = purpose
    }

    /// The flower handle, `nil` for u32.
    public var flowerHandle: UInt32? {
        if case .flower(let handle, _) = classifier { return handle }
        return nil
    }

    /// What stays the same when a filter is replaced in place: where it hangs, its priority and
    /// handle. u32 filters, numbered by the kernel, are their whole content.
    var identity: String {
        switch classifier {
        case .flower(let handle, _): return "filter flower prio \(priority) handle \(String(handle, radix: 16)) parent \(parent)"
        case .u32: return "\(self) \(classifier)"
        }
    }

    public var description: String {
        let kind = flowerHandle.map { "flower handle \(String($0, radix: 16))" } ?? "u32 \(protocolType)"
        return "filter \(kind) prio \(priority) (\(purpose))"
    }
}
