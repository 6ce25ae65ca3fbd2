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
