/// What one direction of the link does to packets.
public struct LinkConditions: Hashable, Sendable {
    /// `nil` means the link is not rate-limited.
    public var bandwidth: Bandwidth?
    public var delay: Delay
    /// Each packet's delay varies uniformly within `delay ± jitter`.
    public var jitter: Delay
    public var loss: LossRate

    public init(bandwidth: Bandwidth? = nil, delay: Delay = .zero, jitter: Delay = .zero, loss: LossRate = .none) {
        self.bandwidth = bandwidth
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
    }

    public static let unshaped = LinkConditions()

    public var isUnshaped: Bool { self == .unshaped }

    /// `32kbit 100ms ±10ms 1% loss`, or `unshaped`.
    public var summary: String {
        var parts: [String] = []
        if let bandwidth { parts.append(bandwidth.description) }
        if !delay.isZero { parts.append(delay.description) }
        if !jitter.isZero { parts.append("±\(jitter)") }
        if !loss.isZero { parts.append("\(loss) loss") }
        return parts.isEmpty ? "unshaped" : parts.joined(separator: " ")
    }
}
