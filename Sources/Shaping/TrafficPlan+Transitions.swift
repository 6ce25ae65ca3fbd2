import Netlink

extension TrafficPlan {
    /// Builds the whole tree from nothing.
    ///
    /// Order matters for what traffic sees meanwhile: the IFB tree is complete before the
    /// ingress redirect starts sending packets to it, and each direction's filters, which
    /// switch shaping on, come after the classes and leaves they point at.
    public var buildSteps: [PlannedStep] {
        var steps: [PlannedStep] = [
            PlannedStep(action: .createIFB(name: target.ifb), undo: .deleteLink(name: target.ifb)),
        ]
        steps += downlink.buildSteps(undoRoot: false)
        steps += uplink.buildSteps(undoRoot: true)
        let ingress = QdiscNode(parent: .ingressParent, handle: ReservedHandles.ingress, settings: .ingress)
        steps.append(PlannedStep(
            action: .addQdisc(device: target.interface, ingress),
            undo: .deleteQdisc(device: target.interface, parent: .ingressParent, handle: ReservedHandles.ingress)
        ))
        steps += ingressRedirects.map { PlannedStep(action: .addFilter(device: target.interface, $0), undo: nil) }
        return steps
    }

    /// Changes values in place to turn this plan into `next`; `nil` when the skeletons differ.
    ///
    /// Only objects whose values differ are touched. Each step's undo restores the old value.
    public func changeSteps(to next: TrafficPlan) -> [PlannedStep]? {
        guard hasSameSkeleton(as: next) else { return nil }
        return uplink.changeSteps(to: next.uplink) + downlink.changeSteps(to: next.downlink)
    }

    /// Writes every value of the plan into an existing tree of the same skeleton whose current
    /// values are unknown (found after a restart). No undo: on failure, rebuild instead.
    public var rewriteSteps: [PlannedStep] {
        [uplink, downlink].flatMap { tree in
            tree.classes.map { PlannedStep(action: .changeClass(device: tree.device, $0), undo: nil) }
                + tree.leaves.map { PlannedStep(action: .changeQdisc(device: tree.device, $0), undo: nil) }
        }
    }

    /// Removes everything the plan created: the ingress redirect first, so no packet is sent to
    /// a vanishing IFB, then the IFB with its tree, then the egress root with its tree.
    public var teardownSteps: [TrafficStep] {
        Self.teardownSteps(for: target)
    }

    /// Teardown by reserved names and handles alone, for trees whose values are unknown
    /// (left over by a daemon that died).
    public static func teardownSteps(for target: ShapingTarget) -> [TrafficStep] {
        [
            .deleteQdisc(device: target.interface, parent: .ingressParent, handle: ReservedHandles.ingress),
            .deleteLink(name: target.ifb),
            .deleteQdisc(device: target.interface, parent: .root, handle: ReservedHandles.root),
        ]
    }
}

extension DirectionTree {
    /// `undoRoot` is false on the IFB, whose whole tree goes with the device.
    func buildSteps(undoRoot: Bool) -> [PlannedStep] {
        var steps = [PlannedStep(
            action: .addQdisc(device: device, root),
            undo: undoRoot ? .deleteQdisc(device: device, parent: root.parent, handle: root.handle) : nil
        )]
        steps += classes.map { PlannedStep(action: .addClass(device: device, $0), undo: nil) }
        steps += leaves.map { PlannedStep(action: .addQdisc(device: device, $0), undo: nil) }
        steps += filters.map { PlannedStep(action: .addFilter(device: device, $0), undo: nil) }
        return steps
    }

    func changeSteps(to next: DirectionTree) -> [PlannedStep] {
        var steps: [PlannedStep] = []
        for (old, new) in zip(classes, next.classes) where old != new {
            steps.append(PlannedStep(action: .changeClass(device: device, new), undo: .changeClass(device: device, old)))
        }
        for (old, new) in zip(leaves, next.leaves) where old != new {
            steps.append(PlannedStep(action: .changeQdisc(device: device, new), undo: .changeQdisc(device: device, old)))
        }
        return steps
    }
}
