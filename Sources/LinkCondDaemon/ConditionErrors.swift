/// A condition was asked for on an interface the daemon's network namespace does not have.
public struct UnknownInterfaceError: Error, Sendable, CustomStringConvertible {
    public var interface: String
    public var description: String {
        "there is no interface '\(interface)' here; 'ip link' lists them"
    }
}

/// The daemon already holds as many conditions as it takes.
public struct TooManyConditionsError: Error, Sendable, CustomStringConvertible {
    public var limit: Int
    public var description: String {
        "linkcondd already holds \(limit) conditions, its limit; switch one off first"
    }
}

/// Loopback carries each packet out and in on the same device: a whole-interface condition
/// there would shape every packet twice.
public struct LoopbackConditionError: Error, Sendable, CustomStringConvertible {
    public var description: String {
        "lo cannot have a condition of its own: each packet crosses it twice (out and back in), so every value would count double"
    }
}
