import Foundation
import Netlink
import Shaping

/// An in-memory model of the tc objects of a few devices, answering steps the way the kernel
/// does: `EEXIST` for a taken handle, `ENOENT` for a missing object, children deleted with
/// their parent, the default root qdisc back when the root is deleted.
///
/// `refusal` injects a failure: it sees each step and its index before the step takes effect.
/// A lock makes it safe to inspect from a test while a daemon under test owns it.
public final class FakeKernel: TrafficControlKernel, @unchecked Sendable {
    public struct Qdisc: Equatable, Sendable, CustomStringConvertible {
        public var parent: TrafficControlHandle
        public var handle: TrafficControlHandle
        public var kind: String
        public var settings: QdiscSettings?

        public var description: String {
            "qdisc \(kind) \(handle) parent \(parent)" + (settings.map { " \($0)" } ?? "")
        }
    }

    public struct Device {
        public var index: Int32
        public var kind: String?
        public var qdiscs: [Qdisc]
        public var classes: [ClassNode] = []
        /// Filters by the handle of the qdisc they hang from.
        public var filters: [TrafficControlHandle: [FilterNode]] = [:]
    }

    private let lock = NSLock()
    private var _devices: [String: Device] = [:]
    private var _executed: [TrafficStep] = []
    private var _refusal: (@Sendable (TrafficStep, Int) -> NetlinkError?)?
    private var _refusalAfterEffect: (@Sendable (TrafficStep, Int) -> NetlinkError?)?
    private var _counters: [String: [TrafficControlHandle: TrafficStatistics]] = [:]
    private var _surveys = 0
    private var nextIndex: Int32 = 2

    public var devices: [String: Device] { lock.withLock { _devices } }
    public var executed: [TrafficStep] { lock.withLock { _executed } }
    public var refusal: (@Sendable (TrafficStep, Int) -> NetlinkError?)? {
        get { lock.withLock { _refusal } }
        set { lock.withLock { _refusal = newValue } }
    }
    /// A refusal the kernel answers after the step took effect, as netem's change does when it
    /// refuses a duplicating netem beside another (it has set the delay and the rest by then).
    public var refusalAfterEffect: (@Sendable (TrafficStep, Int) -> NetlinkError?)? {
        get { lock.withLock { _refusalAfterEffect } }
        set { lock.withLock { _refusalAfterEffect = newValue } }
    }
    /// What a survey reports as the counters of a qdisc, by device name and handle: the traffic
    /// a test pretends went through it. Others read as having none.
    public var counters: [String: [TrafficControlHandle: TrafficStatistics]] {
        get { lock.withLock { _counters } }
        set { lock.withLock { _counters = newValue } }
    }
    /// How many surveys were asked for.
    public var surveys: Int { lock.withLock { _surveys } }

    public init(interfaces: [String] = ["eth0"]) {
        for name in interfaces {
            addDevice(name, kind: "veth")
        }
    }

    public func addDevice(_ name: String, kind: String?) {
        lock.withLock { insertDevice(name, kind: kind) }
    }

    private func insertDevice(_ name: String, kind: String?) {
        _devices[name] = Device(index: nextIndex, kind: kind, qdiscs: [Self.defaultRoot])
        nextIndex += 1
    }

    /// Removes the filters of one priority from a qdisc, as a daemon killed between creating
    /// them would have left it.
    public func removeFilters(on device: String, parent: TrafficControlHandle, priority: UInt16) {
        lock.withLock { _devices[device]?.filters[parent]?.removeAll { $0.priority == priority } }
    }

    public func removeDevice(_ name: String) {
        lock.withLock { _devices[name] = nil }
    }

    /// A qdisc someone else created.
    public func addForeignQdisc(on device: String, parent: TrafficControlHandle, handle: TrafficControlHandle, kind: String) {
        lock.withLock {
            _devices[device]?.qdiscs.removeAll { $0.parent == parent }
            _devices[device]?.qdiscs.append(Qdisc(parent: parent, handle: handle, kind: kind, settings: nil))
        }
    }

    static let defaultRoot = Qdisc(parent: .root, handle: .unspecified, kind: "noqueue", settings: nil)

    /// Everything on a device, in a stable text form, for "left exactly as it was" checks.
    public func state(of device: String) -> String {
        guard let state = devices[device] else { return "\(device): absent" }
        var lines = ["\(device) (\(state.kind ?? "physical"))"]
        lines += state.qdiscs.map(\.description).sorted()
        lines += state.classes.map { "\($0)" }.sorted()
        lines += state.filters.sorted { $0.key.rawValue < $1.key.rawValue }.flatMap { parent, filters in
            filters.map { "filter on \(parent): \($0) \($0.classifier) \($0.target)" }
        }
        return lines.joined(separator: "\n")
    }

    /// All devices, sorted, for whole-system comparisons.
    public var fullState: String {
        devices.keys.sorted().map(state(of:)).joined(separator: "\n---\n")
    }

    public func qdisc(_ handle: TrafficControlHandle, on device: String) -> Qdisc? {
        devices[device]?.qdiscs.first { $0.handle == handle }
    }

    public func htbClass(_ classID: TrafficControlHandle, on device: String) -> ClassNode? {
        devices[device]?.classes.first { $0.classID == classID }
    }

    // MARK: TrafficControlKernel

    public func execute(_ step: TrafficStep) throws(NetlinkError) {
        lock.lock()
        defer { lock.unlock() }
        if let refusal = _refusal?(step, _executed.count) {
            _executed.append(step)
            throw refusal
        }
        _executed.append(step)
        try apply(step)
        if let refusal = _refusalAfterEffect?(step, _executed.count - 1) {
            throw refusal
        }
    }

    private func apply(_ step: TrafficStep) throws(NetlinkError) {
        switch step {
        case .createIFB(let name):
            guard _devices[name] == nil else { throw Self.error(EEXIST, step) }
            insertDevice(name, kind: "ifb")
        case .deleteLink(let name):
            guard _devices[name] != nil else { throw Self.error(ENODEV, step) }
            _devices[name] = nil
        case .addQdisc(let name, _), .changeQdisc(let name, _), .deleteQdisc(let name, _, _), .addClass(let name, _),
             .changeClass(let name, _), .deleteClass(let name, _), .addFilter(let name, _), .replaceFilter(let name, _),
             .deleteFilter(let name, _):
            if case .addFilter(_, let node) = step, case .redirect(let target) = node.target, _devices[target] == nil {
                throw Self.error(ENODEV, step)
            }
            // A copy changed and stored back: a refused step leaves the device as it was.
            guard var device = _devices[name] else { throw Self.error(ENODEV, step) }
            try Self.apply(step, to: &device)
            _devices[name] = device
        }
    }

    /// One step's change to the device it names.
    private static func apply(_ step: TrafficStep, to state: inout Device) throws(NetlinkError) {
        switch step {
        case .createIFB, .deleteLink:
            break
        case .addQdisc(_, let node):
            try add(node, to: &state, step)
        case .changeQdisc(_, let node):
            guard let index = state.qdiscs.firstIndex(where: { $0.handle == node.handle && $0.parent == node.parent }) else {
                throw error(ENOENT, step)
            }
            guard state.qdiscs[index].kind == node.settings.kind else { throw error(EINVAL, step) }
            state.qdiscs[index].settings = node.settings
        case .deleteQdisc(_, let parent, let handle):
            try delete(parent: parent, handle: handle, from: &state, step)
        case .addClass(_, let node):
            guard state.qdiscs.contains(where: { $0.handle == node.classID.qdisc && $0.kind == "htb" }) else { throw error(EINVAL, step) }
            guard !state.classes.contains(where: { $0.classID == node.classID }) else { throw error(EEXIST, step) }
            guard node.parent.minor == 0 || state.classes.contains(where: { $0.classID == node.parent }) else { throw error(ENOENT, step) }
            state.classes.append(node)
        case .changeClass(_, let node):
            guard let index = state.classes.firstIndex(where: { $0.classID == node.classID }) else { throw error(ENOENT, step) }
            state.classes[index] = node
        case .deleteClass(_, let node):
            guard state.classes.contains(where: { $0.classID == node.classID }) else { throw error(ENOENT, step) }
            let busy = state.classes.contains { $0.parent == node.classID }
                || state.filters.values.joined().contains { $0.target == .classify(node.classID) }
            guard !busy else { throw error(EBUSY, step) }
            state.classes.removeAll { $0.classID == node.classID }
            if let leaf = state.qdiscs.first(where: { $0.parent == node.classID }) {
                removeTree(leaf.handle, from: &state)
            }
        case .addFilter(_, let node):
            guard state.qdiscs.contains(where: { $0.handle == node.parent }) else { throw error(EINVAL, step) }
            if let handle = node.flowerHandle {
                let taken = state.filters[node.parent, default: []].contains { $0.priority == node.priority && $0.flowerHandle == handle }
                guard !taken else { throw error(EEXIST, step) }
            }
            state.filters[node.parent, default: []].append(node)
        case .replaceFilter(_, let node):
            guard let index = flowerFilter(node, in: state) else { throw error(ENOENT, step) }
            state.filters[node.parent]?[index] = node
        case .deleteFilter(_, let node):
            guard let index = flowerFilter(node, in: state) else { throw error(ENOENT, step) }
            state.filters[node.parent]?.remove(at: index)
        }
    }

    /// Where the flower filter a replacement or deletion names sits under its parent.
    private static func flowerFilter(_ node: FilterNode, in state: Device) -> Int? {
        guard let handle = node.flowerHandle else { return nil }
        return state.filters[node.parent]?.firstIndex { $0.priority == node.priority && $0.flowerHandle == handle }
    }

    public func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
        let devices = self.devices
        let counters = self.counters
        lock.withLock { _surveys += 1 }
        var survey = KernelSurvey(target: target, interface: link(target.interface, in: devices), ifb: link(target.ifb, in: devices))
        if let interface = devices[target.interface] {
            survey.qdiscs = qdiscInfos(interface, counters: counters[target.interface] ?? [:])
            survey.ingressFilters = filterInfos(interface, parent: .ingress, devices: devices)
            survey.classes = classInfos(interface)
            survey.rootFilters = filterInfos(interface, parent: ReservedHandles.root, devices: devices)
        }
        if let ifb = devices[target.ifb] {
            survey.ifbQdiscs = qdiscInfos(ifb, counters: counters[target.ifb] ?? [:])
            survey.ifbClasses = classInfos(ifb)
            survey.ifbRootFilters = filterInfos(ifb, parent: ReservedHandles.root, devices: devices)
        }
        return survey
    }

    /// The filters on `parent` as the kernel reports them: u32 nodes numbered in creation
    /// order, with the keys as sent and the redirect target's index.
    private func filterInfos(_ device: Device, parent: TrafficControlHandle, devices: [String: Device]) -> [FilterInfo] {
        (device.filters[parent] ?? []).enumerated().map { offset, filter in
            var redirect: Int32?
            var classID: TrafficControlHandle?
            switch filter.target {
            case .redirect(let name): redirect = devices[name]?.index ?? 0
            case .classify(let target): classID = target
            }
            guard let encoded = filter.encoded(redirectIndex: redirect) else {
                return FilterInfo(
                    parent: parent, priority: filter.priority, protocolType: filter.protocolType,
                    handle: filter.flowerHandle ?? 0, kind: "flower", classID: classID, redirectInterfaceIndex: nil
                )
            }
            return FilterInfo(
                parent: parent, priority: filter.priority, protocolType: filter.protocolType,
                handle: 0x8000_0800 + UInt32(offset), kind: "u32", classID: classID, redirectInterfaceIndex: redirect,
                keys: encoded.wireKeys
            )
        }
    }

    private func classInfos(_ device: Device) -> [ClassInfo] {
        // As htb dumps them: a class at the top of its qdisc has the parent TC_H_ROOT.
        device.classes.map { ClassInfo(handle: $0.classID, parent: $0.parent.minor == 0 ? .root : $0.parent, kind: "htb") }
    }

    // MARK: Model

    private func link(_ name: String, in devices: [String: Device]) -> LinkInfo? {
        devices[name].map { LinkInfo(index: $0.index, name: name, kind: $0.kind, isUp: true, mtu: 1500) }
    }

    private func qdiscInfos(_ device: Device, counters: [TrafficControlHandle: TrafficStatistics]) -> [QdiscInfo] {
        device.qdiscs.map { qdisc in
            var netem: NetemOptions?
            if case .netem(let settings) = qdisc.settings { netem = settings.encoded }
            return QdiscInfo(
                interfaceIndex: device.index, handle: qdisc.handle, parent: qdisc.parent, kind: qdisc.kind, netem: netem,
                statistics: counters[qdisc.handle]
            )
        }
    }

    private static func add(_ node: QdiscNode, to device: inout Device, _ step: TrafficStep) throws(NetlinkError) {
        guard !device.qdiscs.contains(where: { $0.handle == node.handle && node.handle != .ingress }) else {
            throw error(EEXIST, step)
        }
        if node.parent == .root {
            guard let root = device.qdiscs.first(where: { $0.parent == .root }), root.handle == .unspecified else {
                throw error(EEXIST, step)
            }
            device.qdiscs.removeAll { $0.parent == .root }
        } else if node.parent == .ingressParent {
            guard !device.qdiscs.contains(where: { $0.parent == .ingressParent }) else { throw error(EEXIST, step) }
        } else {
            // A class of an htb, or the one class of a netem (`netem:1`), which takes one child.
            let netemClass = node.parent.minor == 1 && device.qdiscs.contains { $0.handle == node.parent.qdisc && $0.kind == "netem" }
            guard netemClass || device.classes.contains(where: { $0.classID == node.parent }) else { throw error(ENOENT, step) }
            guard !device.qdiscs.contains(where: { $0.parent == node.parent }) else { throw error(EEXIST, step) }
        }
        device.qdiscs.append(Qdisc(parent: node.parent, handle: node.handle, kind: node.settings.kind, settings: node.settings))
    }

    private static func delete(
        parent: TrafficControlHandle, handle: TrafficControlHandle, from device: inout Device, _ step: TrafficStep
    ) throws(NetlinkError) {
        guard let victim = device.qdiscs.first(where: { $0.parent == parent }), victim.handle != .unspecified else {
            throw error(ENOENT, step)
        }
        guard handle == .unspecified || victim.handle == handle else { throw error(EINVAL, step) }
        removeTree(victim.handle, from: &device)
        if parent == .root {
            device.qdiscs.append(defaultRoot)
        }
    }

    /// Removes a qdisc with its classes, their leaf qdiscs (recursively) and its filters.
    private static func removeTree(_ handle: TrafficControlHandle, from device: inout Device) {
        device.classes.removeAll { $0.classID.qdisc == handle }
        device.filters[handle] = nil
        // Children hang from classes of this qdisc: htb's, or netem's one class.
        let leaves = device.qdiscs.filter { $0.parent.minor != 0 && $0.parent.qdisc == handle && $0.parent != .root && $0.parent != .ingressParent }.map(\.handle)
        device.qdiscs.removeAll { $0.handle == handle }
        for leaf in leaves {
            removeTree(leaf, from: &device)
        }
    }

    public static func error(_ errno: Int32, _ step: TrafficStep, message: String? = nil) -> NetlinkError {
        NetlinkError(code: code(for: errno), operation: "\(step)", errno: errno, reason: String(cString: strerror(errno)), kernelMessage: message)
    }

    private static func code(for errno: Int32) -> NetlinkError.Code {
        switch errno {
        case EPERM: return .notPermitted
        case ENODEV: return .noSuchDevice
        case EEXIST: return .exists
        case ENOENT: return .notFound
        case EOPNOTSUPP: return .unsupported
        case EINVAL: return .invalid
        default: return .other
        }
    }
}
