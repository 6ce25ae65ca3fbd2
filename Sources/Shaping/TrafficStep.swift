import Netlink

/// One netlink request in applying, switching or removing a plan.
public enum TrafficStep: Hashable, Sendable, CustomStringConvertible {
    case createIFB(name: String)
    case deleteLink(name: String)
    case addQdisc(device: String, QdiscNode)
    case changeQdisc(device: String, QdiscNode)
    case deleteQdisc(device: String, parent: TrafficControlHandle, handle: TrafficControlHandle)
    case addClass(device: String, ClassNode)
    case changeClass(device: String, ClassNode)
    /// Deletes the class with the qdisc below it.
    case deleteClass(device: String, ClassNode)
    case addFilter(device: String, FilterNode)
    /// Swaps a flower filter's keys and class for the node's, in one step.
    case replaceFilter(device: String, FilterNode)
    /// Deletes one flower filter by its handle.
    case deleteFilter(device: String, FilterNode)

    public var description: String {
        switch self {
        case .createIFB(let name): return "create ifb \(name)"
        case .deleteLink(let name): return "delete device \(name)"
        case .addQdisc(let device, let node): return "add \(node.identity) on \(device)"
        case .changeQdisc(let device, let node): return "change \(node.identity) on \(device)"
        case .deleteQdisc(let device, let parent, let handle): return "delete qdisc \(handle) parent \(parent) on \(device)"
        case .addClass(let device, let node): return "add \(node.identity) on \(device)"
        case .changeClass(let device, let node): return "change \(node.identity) on \(device)"
        case .deleteClass(let device, let node): return "delete \(node.identity) on \(device)"
        case .addFilter(let device, let node): return "add \(node) on \(device)"
        case .replaceFilter(let device, let node): return "replace \(node) on \(device)"
        case .deleteFilter(let device, let node): return "delete \(node) on \(device)"
        }
    }

    /// Whether the step changes an object's values where it is, which a refusal may have left
    /// half-changed.
    var isChangeInPlace: Bool {
        switch self {
        case .changeQdisc, .changeClass: return true
        default: return false
        }
    }

    /// Whether the kernel answering "no such object" means the step's goal already holds.
    var isRemoval: Bool {
        switch self {
        case .deleteLink, .deleteQdisc, .deleteClass, .deleteFilter: return true
        default: return false
        }
    }
}

/// A step and what undoes it if a later step fails.
///
/// Objects created inside a tree have no undo of their own: rolling back removes the tree's
/// top-level object, which takes everything below it along.
public struct PlannedStep: Hashable, Sendable {
    public var action: TrafficStep
    public var undo: TrafficStep?
}
