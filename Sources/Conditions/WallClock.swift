#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The time of day leases are measured on: a lease ends at a wall-clock time, which the state
/// file keeps across restarts. The daemon reads the system's; tests hand the conditioner one they
/// move by hand, beside an event loop whose timers they advance with it.
public struct WallClock: Sendable {
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    public static let system = WallClock { Date() }
}
