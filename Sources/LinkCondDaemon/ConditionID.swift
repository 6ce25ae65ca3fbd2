/// Names one condition in `/v1/conditions/{id}`, the state file and the history.
///
/// A condition today covers one whole interface, so the interface's name is its id.
public struct ConditionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var interface: String

    public init(interface: String) {
        self.interface = interface
    }

    public var description: String { interface }

    public static func < (lhs: ConditionID, rhs: ConditionID) -> Bool {
        lhs.interface < rhs.interface
    }
}
