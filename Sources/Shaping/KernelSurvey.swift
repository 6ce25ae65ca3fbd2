import Netlink

/// What the kernel has on the interface and the IFB name linkcond reserves, read before
/// building or removing a tree.
public struct KernelSurvey: Sendable, Equatable {
    public var target: ShapingTarget
    public var interface: LinkInfo?
    public var ifb: LinkInfo?
    /// Qdiscs on the interface, the kernel's defaults included.
    public var qdiscs: [QdiscInfo] = []
    /// Filters on the interface's ingress qdisc, if it has one.
    public var ingressFilters: [FilterInfo] = []
    /// Qdiscs on the IFB, if it exists.
    public var ifbQdiscs: [QdiscInfo] = []

    public init(target: ShapingTarget, interface: LinkInfo?, ifb: LinkInfo?) {
        self.target = target
        self.interface = interface
        self.ifb = ifb
    }

    /// Who owns an object linkcond might have created.
    public enum Ownership: Equatable, Sendable {
        case absent
        case ours
        /// Someone else's; `description` says what it is.
        case foreign(String)
    }

    /// The egress root: absent when it is the kernel's default (handle `0:`).
    public var root: Ownership {
        guard let root = qdiscs.first(where: { $0.parent == .root }), root.handle != .unspecified else {
            return .absent
        }
        if root.handle == ReservedHandles.root && root.kind == "htb" {
            return .ours
        }
        return .foreign("root \(root.kind) qdisc \(root.handle)")
    }

    /// The IFB: ours when a device of the reserved name is an IFB.
    public var ifbOwnership: Ownership {
        guard let ifb else { return .absent }
        return ifb.kind == "ifb" ? .ours : .foreign("device \(ifb.name) (\(ifb.kind ?? "physical")), which has linkcond's reserved IFB name")
    }

    /// The ingress qdisc: ours when every filter on it is one of our redirects to our IFB. An
    /// empty one counts as ours only next to both our root and our IFB: a build cut short
    /// between creating it and its filters.
    public var ingress: Ownership {
        guard let ingress = qdiscs.first(where: { $0.parent == .ingressParent }) else { return .absent }
        let foreign = Ownership.foreign("\(ingress.kind) qdisc on its ingress")
        guard ingress.kind == "ingress" else { return foreign }
        let nodes = ingressFilters.filter { $0.handle & 0xFFF != 0 }
        if nodes.isEmpty {
            return root == .ours && ifbOwnership == .ours ? .ours : foreign
        }
        let redirectsToOurIFB = nodes.allSatisfy { filter in
            filter.kind == "u32"
                && [ReservedHandles.IngressPriority.ipv4, ReservedHandles.IngressPriority.ipv6].contains(filter.priority)
                && ifb != nil && filter.redirectInterfaceIndex == ifb?.index
        }
        return redirectsToOurIFB ? .ours : foreign
    }

    /// Whether any object linkcond creates is present.
    public var hasLinkcondObjects: Bool {
        root == .ours || ingress == .ours || ifbOwnership == .ours
    }

    /// Whether every top-level object and both bulk leaves are in place.
    public var isCompleteTree: Bool {
        root == .ours && ingress == .ours && ifbOwnership == .ours
            && qdiscs.contains { $0.handle == ReservedHandles.bulkLeaf }
            && ifbQdiscs.contains { $0.handle == ReservedHandles.bulkLeaf }
    }

    /// The netem settings currently on the uplink bulk leaf, for reading a condition back.
    public var uplinkBulkNetem: NetemOptions? {
        qdiscs.first { $0.handle == ReservedHandles.bulkLeaf }?.netem
    }

    public var downlinkBulkNetem: NetemOptions? {
        ifbQdiscs.first { $0.handle == ReservedHandles.bulkLeaf }?.netem
    }

    /// Steps that remove exactly the objects that are ours, in teardown order.
    public var teardownSteps: [TrafficStep] {
        var steps: [TrafficStep] = []
        if ingress == .ours {
            steps.append(.deleteQdisc(device: target.interface, parent: .ingressParent, handle: ReservedHandles.ingress))
        }
        if ifbOwnership == .ours {
            steps.append(.deleteLink(name: target.ifb))
        }
        if root == .ours {
            steps.append(.deleteQdisc(device: target.interface, parent: .root, handle: ReservedHandles.root))
        }
        return steps
    }
}
