/// A qdisc's kind and parameters, in the units libnl and the kernel take.
public enum QdiscOptions: Sendable, Equatable {
    case htb(HTBQdiscOptions)
    case netem(NetemOptions)
    case pfifo(limitPackets: UInt32)
    case ingress

    /// The kernel's name for the qdisc kind (`TCA_KIND`).
    public var kind: String {
        switch self {
        case .htb: return "htb"
        case .netem: return "netem"
        case .pfifo: return "pfifo"
        case .ingress: return "ingress"
        }
    }
}

/// Parameters of an htb root qdisc (`TCA_HTB_INIT`).
public struct HTBQdiscOptions: Sendable, Equatable {
    /// Minor number of the class unclassified traffic goes to.
    public var defaultClass: UInt16
    /// Rate-to-quantum divisor; irrelevant when every class sets its quantum, but kept fixed.
    public var rateToQuantum: UInt32

    public init(defaultClass: UInt16, rateToQuantum: UInt32 = 10) {
        self.defaultClass = defaultClass
        self.rateToQuantum = rateToQuantum
    }
}

/// Parameters of a netem qdisc as libnl takes them.
///
/// Times are microseconds (libnl converts them to psched ticks); probabilities and
/// correlations are the kernel's raw u32 values, where `UInt32.max` means 100%.
public struct NetemOptions: Sendable, Equatable {
    public var delayMicroseconds: UInt32
    public var jitterMicroseconds: UInt32
    public var lossProbability: UInt32
    public var limitPackets: UInt32
    public var delayCorrelation: UInt32 = 0
    public var lossCorrelation: UInt32 = 0
    public var duplicateProbability: UInt32 = 0
    public var duplicateCorrelation: UInt32 = 0
    public var corruptProbability: UInt32 = 0
    public var corruptCorrelation: UInt32 = 0
    public var reorderProbability: UInt32 = 0
    public var reorderCorrelation: UInt32 = 0
    /// The jitter's distribution: values of the inverse distribution function in units of
    /// 1/8192 (NETEM_DIST_SCALE); empty: netem's own uniform jitter.
    public var distribution: [Int16] = []
    /// A Gilbert-Elliott loss model in place of `lossProbability`.
    public var gilbertElliott: GilbertElliott?
    /// netem's own rate in bytes per second; 0: none. With a rate, netem sends no packet
    /// before the one ahead of it, so jitter cannot reorder.
    public var rateBytesPerSecond: UInt32 = 0

    /// The four probabilities of netem's Gilbert-Elliott model, as the kernel takes them: a
    /// burst begins (`p`) and ends (`r`); a packet gets through in a burst with `h`, and is lost
    /// between bursts with `k1` (tc calls it 1-k).
    public struct GilbertElliott: Sendable, Equatable {
        public var p: UInt32
        public var r: UInt32
        public var h: UInt32
        public var k1: UInt32

        public init(p: UInt32, r: UInt32, h: UInt32, k1: UInt32) {
            self.p = p
            self.r = r
            self.h = h
            self.k1 = k1
        }
    }

    public init(delayMicroseconds: UInt32, jitterMicroseconds: UInt32, lossProbability: UInt32, limitPackets: UInt32) {
        self.delayMicroseconds = delayMicroseconds
        self.jitterMicroseconds = jitterMicroseconds
        self.lossProbability = lossProbability
        self.limitPackets = limitPackets
    }
}

/// Parameters of an htb class: rates in bytes per second, buckets and quantum in bytes.
public struct HTBClassOptions: Sendable, Equatable {
    public var rateBytesPerSecond: UInt64
    public var ceilBytesPerSecond: UInt64
    public var burstBytes: UInt32
    public var ceilBurstBytes: UInt32
    public var quantumBytes: UInt32

    public init(rateBytesPerSecond: UInt64, ceilBytesPerSecond: UInt64, burstBytes: UInt32, ceilBurstBytes: UInt32, quantumBytes: UInt32) {
        self.rateBytesPerSecond = rateBytesPerSecond
        self.ceilBytesPerSecond = ceilBytesPerSecond
        self.burstBytes = burstBytes
        self.ceilBurstBytes = ceilBurstBytes
        self.quantumBytes = quantumBytes
    }
}
