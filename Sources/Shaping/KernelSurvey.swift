import Netlink

/// What the kernel has on the interface and the IFB name linkcond reserves, read before
/// building or removing a tree.
public struct KernelSurvey: Sendable, Equatable {
    public var target: ShapingTarget
    public var interface: LinkInfo?
    public var ifb: LinkInfo?
    /// The interface's root qdisc (the kernel's default included) and ingress qdisc, and the
    /// qdiscs under linkcond's classes when the root is linkcond's.
    public var qdiscs: [QdiscInfo] = []
    /// Filters on the interface's ingress qdisc, if it has one.
    public var ingressFilters: [FilterInfo] = []
    /// The IFB's root qdisc, and the qdiscs under linkcond's classes when the root is linkcond's.
    public var ifbQdiscs: [QdiscInfo] = []
    /// Classes of linkcond's root htb on the interface and on the IFB, when they have one.
    public var classes: [ClassInfo] = []
    public var ifbClasses: [ClassInfo] = []
    /// Filters on linkcond's root htb on the interface and on the IFB, when they have one.
    public var rootFilters: [FilterInfo] = []
    public var ifbRootFilters: [FilterInfo] = []

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
                && ReservedHandles.IngressPriority.redirects.contains { $0.priority == filter.priority }
                && ifb != nil && filter.redirectInterfaceIndex == ifb?.index
        }
        return redirectsToOurIFB ? .ours : foreign
    }

    /// Whether any object linkcond creates is present.
    public var hasLinkcondObjects: Bool {
        root == .ours || ingress == .ours || ifbOwnership == .ours
    }

    /// Whether the tree in the kernel is exactly `plan`'s, object for object and filter for
    /// filter (values aside, which a re-adoption rewrites): only such a tree may be re-adopted.
    public func isComplete(for plan: TrafficPlan) -> Bool {
        root == .ours && ingress == .ours && ifbOwnership == .ours && deviations(from: plan).isEmpty
    }

    /// What differs between the kernel and `plan`'s skeleton, one line per object missing
    /// (`-`) or unexpected (`+`), for logs.
    public func deviations(from plan: TrafficPlan) -> [String] {
        let ifbIndex = ifb?.index ?? 0
        func expected(_ tree: DirectionTree) -> [String] {
            [Self.line(tree.root)] + tree.leaves.map(Self.line) + tree.classes.map(Self.line)
                + tree.filters.map { Self.line($0, redirectIndex: nil) }
        }
        let wanted = [
            plan.target.interface: expected(plan.uplink)
                + [Self.line(QdiscNode(parent: .ingressParent, handle: ReservedHandles.ingress, settings: .ingress))]
                + plan.ingressRedirects.map { Self.line($0, redirectIndex: ifbIndex) },
            plan.target.ifb: expected(plan.downlink),
        ]
        let found = [
            plan.target.interface: Self.lines(qdiscs: qdiscs, classes: classes, filters: rootFilters + ingressFilters),
            plan.target.ifb: Self.lines(qdiscs: ifbQdiscs, classes: ifbClasses, filters: ifbRootFilters),
        ]
        var differences: [String] = []
        for device in [plan.target.interface, plan.target.ifb] {
            var unmatched = found[device] ?? []
            for line in wanted[device] ?? [] {
                if let index = unmatched.firstIndex(of: line) {
                    unmatched.remove(at: index)
                } else {
                    differences.append("- \(line) on \(device)")
                }
            }
            differences += unmatched.map { "+ \($0) on \(device)" }
        }
        return differences
    }

    /// The objects of a device that linkcond's trees consist of, as comparable lines: its
    /// qdiscs, the ingress qdisc, the classes of its root, and the filters read (flower ones
    /// by priority and handle: their keys are rewritten when a tree is re-adopted).
    private static func lines(qdiscs: [QdiscInfo], classes: [ClassInfo], filters: [FilterInfo]) -> [String] {
        qdiscs.filter { ReservedHandles.isLinkcondQdisc($0.handle) || $0.handle == ReservedHandles.ingress }
            .map { "qdisc \($0.kind) \($0.handle) parent \($0.parent)" }
            + classes.filter { $0.handle.qdisc == ReservedHandles.root }.map { "class \($0.handle) parent \(planned(parentOf: $0))" }
            + filters.filter { $0.isU32Node || $0.isFlowerFilter }.map { info in
                if info.kind == "flower" { return flowerLine(priority: info.priority, handle: info.handle, parent: info.parent) }
                return info.u32Filter.map { line($0, parent: info.parent) } ?? "filter \(info.kind) prio \(info.priority) handle \(info.handle) (unrecognised action)"
            }
    }

    private static func line(_ node: FilterNode, redirectIndex: Int32?) -> String {
        if let handle = node.flowerHandle {
            return flowerLine(priority: node.priority, handle: handle, parent: node.parent)
        }
        return node.encoded(redirectIndex: redirectIndex).map { line($0, parent: node.parent) } ?? "\(node)"
    }

    private static func flowerLine(priority: UInt16, handle: UInt32, parent: TrafficControlHandle) -> String {
        "filter flower prio \(priority) handle \(String(handle, radix: 16)) on \(parent)"
    }

    /// A class's parent as a plan names it. htb dumps a class at the top of its qdisc with the
    /// parent TC_H_ROOT, while a plan (and tc) creates it under the qdisc's handle.
    private static func planned(parentOf info: ClassInfo) -> TrafficControlHandle {
        info.parent == .root ? info.handle.qdisc : info.parent
    }

    private static func line(_ node: QdiscNode) -> String {
        "qdisc \(node.settings.kind) \(node.handle) parent \(node.parent)"
    }

    private static func line(_ node: ClassNode) -> String {
        "class \(node.classID) parent \(node.parent)"
    }

    /// Redirect targets are compared by interface index; `redirectIndex: nil` plans have none.
    private static func line(_ filter: U32Filter, parent: TrafficControlHandle) -> String {
        let keys = filter.wireKeys.map { "\($0.offset)/\(String($0.value, radix: 16))/\(String($0.mask, radix: 16))" }
        let action: String
        switch filter.action {
        case .classify(let classID): action = "classify \(classID)"
        case .redirect(let index): action = "redirect ifindex \(index)"
        }
        return "filter \(filter.protocolType) prio \(filter.priority) on \(parent) [\(keys.joined(separator: " "))] \(action)"
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
