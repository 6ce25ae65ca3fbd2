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

    /// Turns this plan into `next` object by object; `nil` when the two are not of one target
    /// (or differ in what every tree shares, the exemptions), which needs a rebuild.
    ///
    /// Only objects that differ are touched: a condition switching profiles changes its own
    /// classes and leaves in place, one added or removed adds or deletes its own objects. The
    /// count of steps never depends on how many other conditions share the tree. Each step's
    /// undo restores what was there before.
    public func changeSteps(to next: TrafficPlan) -> [PlannedStep]? {
        guard target == next.target, ingressRedirects == next.ingressRedirects,
              let uplinkSteps = uplink.changeSteps(to: next.uplink),
              let downlinkSteps = downlink.changeSteps(to: next.downlink)
        else { return nil }
        return uplinkSteps + downlinkSteps
    }

    /// The steps from this plan to `next` when they differ only in the class and leaf of one
    /// matched condition's `slot` (`Planner.replacingProfile`): found by their handles, without
    /// walking the rest of the tree.
    public func slotChangeSteps(_ slot: UInt16, to next: TrafficPlan) -> [PlannedStep] {
        uplink.slotChangeSteps(slot, to: next.uplink) + downlink.slotChangeSteps(slot, to: next.downlink)
    }

    /// Writes every value of the plan into an existing tree of the same skeleton whose current
    /// values are unknown (found after a restart): classes and leaves are changed, flower
    /// filters replaced, so that keys no survey reads are the plan's too. No undo: on failure,
    /// rebuild instead.
    public var rewriteSteps: [PlannedStep] {
        [uplink, downlink].flatMap { tree in
            tree.classes.map { PlannedStep(action: .changeClass(device: tree.device, $0), undo: nil) }
                + tree.leaves.map { PlannedStep(action: .changeQdisc(device: tree.device, $0), undo: nil) }
                + tree.filters.map { PlannedStep(action: .replaceFilter(device: tree.device, $0), undo: nil) }
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
    /// Puts `objects` (a matched condition's class, leaf and queue) in place of the ones with
    /// their handles; false when there are none.
    mutating func replace(_ objects: (ClassNode, [QdiscNode])) -> Bool {
        guard let classIndex = classes.firstIndex(where: { $0.classID == objects.0.classID }) else { return false }
        let leafIndices = objects.1.map { leaf in leaves.firstIndex { $0.handle == leaf.handle } }
        guard !leafIndices.contains(nil) else { return false }
        classes[classIndex] = objects.0
        for (index, leaf) in zip(leafIndices, objects.1) {
            leaves[index!] = leaf
        }
        return true
    }

    func slotChangeSteps(_ slot: UInt16, to next: DirectionTree) -> [PlannedStep] {
        let classID = ReservedHandles.matchClass(slot)
        var steps: [PlannedStep] = []
        if let old = classes.first(where: { $0.classID == classID }), let new = next.classes.first(where: { $0.classID == classID }), old != new {
            steps.append(PlannedStep(action: .changeClass(device: device, new), undo: .changeClass(device: device, old)))
        }
        for handle in [ReservedHandles.matchLeaf(slot), ReservedHandles.matchQueue(slot)] {
            if let old = leaves.first(where: { $0.handle == handle }), let new = next.leaves.first(where: { $0.handle == handle }), old != new {
                steps.append(PlannedStep(action: .changeQdisc(device: device, new), undo: .changeQdisc(device: device, old)))
            }
        }
        return steps
    }

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

    /// Removals first (filters, then leaves and classes, children before parents), then changes
    /// in place, then additions (classes and leaves before the filters that lead to them).
    func changeSteps(to next: DirectionTree) -> [PlannedStep]? {
        guard device == next.device, root == next.root else { return nil }
        let classesNow = Dictionary(uniqueKeysWithValues: classes.map { ($0.classID, $0) })
        let classesNext = Dictionary(uniqueKeysWithValues: next.classes.map { ($0.classID, $0) })
        let leavesNow = Dictionary(uniqueKeysWithValues: leaves.map { ($0.handle, $0) })
        let leavesNext = Dictionary(uniqueKeysWithValues: next.leaves.map { ($0.handle, $0) })
        let filtersNow = Dictionary(uniqueKeysWithValues: filters.map { ($0.identity, $0) })
        let filtersNext = Dictionary(uniqueKeysWithValues: next.filters.map { ($0.identity, $0) })
        guard filters.allSatisfy({ $0.flowerHandle != nil || filtersNext[$0.identity] != nil }),
              next.filters.allSatisfy({ $0.flowerHandle != nil || filtersNow[$0.identity] != nil })
        else { return nil }

        var steps: [PlannedStep] = []
        for filter in filters where filtersNext[filter.identity] == nil {
            steps.append(PlannedStep(action: .deleteFilter(device: device, filter), undo: .addFilter(device: device, filter)))
        }
        for leaf in leaves.reversed() where leavesNext[leaf.handle] == nil {
            steps.append(PlannedStep(
                action: .deleteQdisc(device: device, parent: leaf.parent, handle: leaf.handle), undo: .addQdisc(device: device, leaf)
            ))
        }
        for node in classes.reversed() where classesNext[node.classID] == nil {
            steps.append(PlannedStep(action: .deleteClass(device: device, node), undo: .addClass(device: device, node)))
        }
        for node in next.classes {
            if let old = classesNow[node.classID], old != node {
                steps.append(PlannedStep(action: .changeClass(device: device, node), undo: .changeClass(device: device, old)))
            }
        }
        for leaf in next.leaves {
            guard let old = leavesNow[leaf.handle], old != leaf else { continue }
            guard old.parent == leaf.parent, old.settings.kind == leaf.settings.kind else { return nil }
            steps.append(PlannedStep(action: .changeQdisc(device: device, leaf), undo: .changeQdisc(device: device, old)))
        }
        for filter in next.filters {
            if let old = filtersNow[filter.identity], old != filter {
                steps.append(PlannedStep(action: .replaceFilter(device: device, filter), undo: .replaceFilter(device: device, old)))
            }
        }
        for node in next.classes where classesNow[node.classID] == nil {
            steps.append(PlannedStep(action: .addClass(device: device, node), undo: .deleteClass(device: device, node)))
        }
        for leaf in next.leaves where leavesNow[leaf.handle] == nil {
            // Goes with its class (or its netem) if a later step fails.
            steps.append(PlannedStep(action: .addQdisc(device: device, leaf), undo: nil))
        }
        for filter in next.filters where filtersNow[filter.identity] == nil {
            steps.append(PlannedStep(action: .addFilter(device: device, filter), undo: .deleteFilter(device: device, filter)))
        }
        return steps
    }
}
