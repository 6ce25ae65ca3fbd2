import Glibc
import Netlink

/// The side-effect edge of shaping: something that carries out steps and reports what a
/// device has. `NetlinkKernel` talks to the real kernel; tests use an in-memory model.
public protocol TrafficControlKernel: AnyObject {
    func execute(_ step: TrafficStep) throws(NetlinkError)
    func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey
}

/// The real kernel, through one libnl socket.
public final class NetlinkKernel: TrafficControlKernel {
    private let socket: NetlinkSocket

    public init() throws(NetlinkError) {
        self.socket = try NetlinkSocket()
    }

    /// The kernel as `socket` sees it: the namespace the socket was made in.
    public init(socket: NetlinkSocket) {
        self.socket = socket
    }

    public func execute(_ step: TrafficStep) throws(NetlinkError) {
        switch step {
        case .createIFB(let name):
            try socket.addIntermediateFunctionalBlock(named: name)
        case .deleteLink(let name):
            try socket.deleteLink(named: name)
        case .addQdisc(let device, let node):
            try socket.addQdisc(interfaceIndex: try index(of: device), parent: node.parent, handle: node.handle, options: node.settings.encoded)
        case .changeQdisc(let device, let node):
            try socket.changeQdisc(interfaceIndex: try index(of: device), parent: node.parent, handle: node.handle, options: node.settings.encoded)
        case .deleteQdisc(let device, let parent, let handle):
            try socket.deleteQdisc(interfaceIndex: try index(of: device), parent: parent, handle: handle)
        case .addClass(let device, let node):
            try socket.addHTBClass(interfaceIndex: try index(of: device), parent: node.parent, classID: node.classID, options: node.encoded)
        case .changeClass(let device, let node):
            try socket.changeHTBClass(interfaceIndex: try index(of: device), parent: node.parent, classID: node.classID, options: node.encoded)
        case .deleteClass(let device, let node):
            try socket.deleteClass(interfaceIndex: try index(of: device), classID: node.classID)
        case .addFilter(let device, let node):
            if let flower = node.flowerFilter {
                try socket.addFlowerFilter(interfaceIndex: try index(of: device), parent: node.parent, filter: flower)
                return
            }
            var redirectIndex: Int32?
            if case .redirect(let target) = node.target {
                redirectIndex = try index(of: target)
            }
            guard let u32 = node.encoded(redirectIndex: redirectIndex) else { preconditionFailure("a redirect is u32: \(node)") }
            try socket.addU32Filter(interfaceIndex: try index(of: device), parent: node.parent, filter: u32)
        case .replaceFilter(let device, let node):
            guard let flower = node.flowerFilter else { preconditionFailure("only flower filters are replaced: \(node)") }
            try socket.addFlowerFilter(interfaceIndex: try index(of: device), parent: node.parent, filter: flower, replacing: true)
        case .deleteFilter(let device, let node):
            guard let flower = node.flowerFilter else { preconditionFailure("only flower filters are deleted one by one: \(node)") }
            try socket.deleteFlowerFilter(interfaceIndex: try index(of: device), parent: node.parent, priority: flower.priority, handle: flower.handle)
        }
    }

    public func survey(_ target: ShapingTarget) throws(NetlinkError) -> KernelSurvey {
        let interface = try socket.link(named: target.interface)
        let ifb = try socket.link(named: target.ifb)
        var survey = KernelSurvey(target: target, interface: interface, ifb: ifb)
        if let interface {
            survey.qdiscs = try qdiscs(attachedAt: [.root, .ingressParent], on: interface.index)
            if survey.qdiscs.contains(where: { $0.parent == .ingressParent }) {
                survey.ingressFilters = try socket.filters(interfaceIndex: interface.index, parent: ReservedHandles.ingress)
            }
            if survey.root == .ours {
                survey.classes = try socket.classes(interfaceIndex: interface.index)
                survey.qdiscs += try leaves(below: survey.classes, on: interface.index)
                survey.rootFilters = try socket.filters(interfaceIndex: interface.index, parent: ReservedHandles.root)
            }
        }
        if let ifb {
            survey.ifbQdiscs = try qdiscs(attachedAt: [.root], on: ifb.index)
            if survey.ifbQdiscs.contains(where: { $0.handle == ReservedHandles.root && $0.kind == "htb" }) {
                survey.ifbClasses = try socket.classes(interfaceIndex: ifb.index)
                survey.ifbQdiscs += try leaves(below: survey.ifbClasses, on: ifb.index)
                survey.ifbRootFilters = try socket.filters(interfaceIndex: ifb.index, parent: ReservedHandles.root)
            }
        }
        return survey
    }

    /// The qdiscs a device has at `parents`, asked for place by place (a place with nothing
    /// attached, such as an inner class, is left out): a survey reads only the objects it
    /// judges, on its own device.
    private func qdiscs(attachedAt parents: [TrafficControlHandle], on interfaceIndex: Int32) throws(NetlinkError) -> [QdiscInfo] {
        var found: [QdiscInfo] = []
        for parent in parents {
            if let qdisc = try socket.qdisc(interfaceIndex: interfaceIndex, attachedAt: parent) {
                found.append(qdisc)
            }
        }
        return found
    }

    /// linkcond's leaf qdiscs, under the classes of its root, and the queues below its netems.
    private func leaves(below classes: [ClassInfo], on interfaceIndex: Int32) throws(NetlinkError) -> [QdiscInfo] {
        let leaves = try qdiscs(attachedAt: classes.map(\.handle).filter { $0.qdisc == ReservedHandles.root }, on: interfaceIndex)
        let queuePlaces = leaves.filter { $0.kind == "netem" && ReservedHandles.isLinkcondQdisc($0.handle) }.map { ReservedHandles.queueParent(of: $0.handle) }
        return leaves + (try qdiscs(attachedAt: queuePlaces, on: interfaceIndex))
    }

    /// Looked up on every use: an interface may be recreated with a new index between requests.
    private func index(of device: String) throws(NetlinkError) -> Int32 {
        guard let link = try socket.link(named: device) else {
            throw NetlinkError(code: .noSuchDevice, operation: "find device \(device)", errno: ENODEV, reason: "no such device")
        }
        return link.index
    }
}
