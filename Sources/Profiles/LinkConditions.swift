/// What one direction of the link does to packets.
public struct LinkConditions: Hashable, Sendable {
    /// `nil` means the link is not rate-limited (unless `trace` gives its rate).
    public var bandwidth: Bandwidth?
    /// A recorded link's capacity, window by window, instead of a fixed `bandwidth`; a profile
    /// gives one or the other.
    public var trace: LinkTrace?
    public var delay: Delay
    /// Each packet's delay varies within `delay ± jitter`, as `jitterDistribution` says.
    public var jitter: Delay
    public var loss: LossRate
    /// The impairments of real links beyond those four: see `Impairments`.
    public var impairments: Impairments

    public init(
        bandwidth: Bandwidth? = nil, trace: LinkTrace? = nil, delay: Delay = .zero, jitter: Delay = .zero, loss: LossRate = .none,
        impairments: Impairments = Impairments()
    ) {
        self.bandwidth = bandwidth
        self.trace = trace
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.impairments = impairments
    }

    public static let unshaped = LinkConditions()

    public var isUnshaped: Bool { self == .unshaped }

    /// `32kbit 100ms ±10ms 1% loss`, `trace subway (mean 4.21Mbit, peak 12Mbit) 40ms`, or `unshaped`.
    public var summary: String {
        var parts: [String] = []
        if let bandwidth { parts.append(bandwidth.description) }
        if let trace { parts.append(trace.summary) }
        if !delay.isZero { parts.append(delay.description) }
        if !jitter.isZero {
            parts.append("±\(jitter)" + (impairments.jitterDistribution == .uniform ? "" : " \(impairments.jitterDistribution.rawValue)"))
            if impairments.keepsOrder { parts.append("in order") }
        }
        if !loss.isZero { parts.append("\(loss) loss") }
        parts += impairments.summaryParts
        return parts.isEmpty ? "unshaped" : parts.joined(separator: " ")
    }
}

/// How a link misbehaves beyond rate, delay, jitter and independent loss: netem's correlated
/// and bursty loss, duplication, corruption, reordering, the shape of the jitter, and how much a
/// shaped link queues before it drops. The default is none of it.
///
/// Every probability is a `LossRate` (a percentage kept exactly as written). A correlation of
/// `c` makes each random draw depend by `c` on the previous one (netem's model).
public struct Impairments: Hashable, Sendable {
    public var jitterDistribution: JitterDistribution
    public var jitterCorrelation: LossRate
    /// Jitter that never reorders: a packet leaves no earlier than the one before it.
    public var keepsOrder: Bool
    public var lossCorrelation: LossRate
    /// Losses in bursts (a Gilbert model); given instead of `loss`.
    public var burstLoss: BurstLoss?
    public var duplicate: LossRate
    public var duplicateCorrelation: LossRate
    /// Packets with one bit flipped at random.
    public var corrupt: LossRate
    public var corruptCorrelation: LossRate
    /// Packets sent at once instead of after the delay, so that they overtake the ones before.
    public var reorder: LossRate
    public var reorderCorrelation: LossRate
    /// How much a shaped direction (a `bandwidth` or a `trace`) holds behind its rate before it
    /// drops (drop-tail); `nil`: linkcond's default, a short queue.
    public var queue: QueueLimit?

    public init(
        jitterDistribution: JitterDistribution = .uniform, jitterCorrelation: LossRate = .none, keepsOrder: Bool = false,
        lossCorrelation: LossRate = .none, burstLoss: BurstLoss? = nil,
        duplicate: LossRate = .none, duplicateCorrelation: LossRate = .none,
        corrupt: LossRate = .none, corruptCorrelation: LossRate = .none,
        reorder: LossRate = .none, reorderCorrelation: LossRate = .none,
        queue: QueueLimit? = nil
    ) {
        self.jitterDistribution = jitterDistribution
        self.jitterCorrelation = jitterCorrelation
        self.keepsOrder = keepsOrder
        self.lossCorrelation = lossCorrelation
        self.burstLoss = burstLoss
        self.duplicate = duplicate
        self.duplicateCorrelation = duplicateCorrelation
        self.corrupt = corrupt
        self.corruptCorrelation = corruptCorrelation
        self.reorder = reorder
        self.reorderCorrelation = reorderCorrelation
        self.queue = queue
    }

    public var isNone: Bool { self == Impairments() }

    /// `2% burst loss (4 packets)`, `0.5% duplicated`, …, for `LinkConditions.summary` (which
    /// writes the jitter's distribution and `in order` next to the jitter).
    var summaryParts: [String] {
        var parts: [String] = []
        if let burstLoss { parts.append("\(burstLoss.average) burst loss (\(burstLoss.meanBurstPackets.formattedPackets) packets)") }
        if !duplicate.isZero { parts.append("\(duplicate) duplicated") }
        if !corrupt.isZero { parts.append("\(corrupt) corrupted") }
        if !reorder.isZero { parts.append("\(reorder) reordered") }
        if let queue { parts.append("queue \(queue)") }
        return parts
    }
}

/// The shape of the jitter: netem's distribution tables.
public enum JitterDistribution: String, Hashable, Sendable, CaseIterable {
    case uniform
    case normal
    case pareto
    /// Pareto's tail on a normal body, as measured on real links (netem's `paretonormal`).
    case paretoNormal = "paretonormal"
}

/// Losses that come in bursts: the average share of packets lost, and how many are lost in a
/// row on average. Played by netem's Gilbert–Elliott model with every packet lost in a burst
/// and none between: a burst begins with probability `p` and ends with `r = 1 / meanBurst`,
/// where `p / (p + r)` is the average.
public struct BurstLoss: Hashable, Sendable {
    public var average: LossRate
    public var meanBurstPackets: Double

    public init(average: LossRate, meanBurstPackets: Double) {
        self.average = average
        self.meanBurstPackets = meanBurstPackets
    }

    /// Each packet between bursts: the chance that a burst begins with it.
    public var enterProbability: Double {
        let r = leaveProbability
        let a = average.fraction
        return a >= 1 ? 1 : r * a / (1 - a)
    }

    /// Each packet in a burst: the chance that the burst ends after it.
    public var leaveProbability: Double { 1 / meanBurstPackets }
}

/// How much a shaped direction queues behind its rate.
public enum QueueLimit: Hashable, Sendable, CustomStringConvertible {
    case packets(UInt32)
    case bytes(UInt64)
    /// The time the queue takes to drain at the direction's rate.
    case milliseconds(UInt32)

    public var description: String {
        switch self {
        case .packets(let count): return "\(count) packets"
        case .bytes(let count): return "\(count) B"
        case .milliseconds(let count): return "\(count)ms"
        }
    }
}

extension Double {
    /// `4`, `2.5`.
    var formattedPackets: String {
        self == rounded() ? "\(Int(self))" : "\((self * 10).rounded() / 10)"
    }
}
