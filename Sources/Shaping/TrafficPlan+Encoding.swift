import Netlink
import Profiles

// Human units to the units libnl and the kernel take. Nothing else in linkcond converts.

extension QdiscSettings {
    public var encoded: QdiscOptions {
        switch self {
        case .htb(let defaultClass):
            return .htb(HTBQdiscOptions(defaultClass: defaultClass.minor))
        case .netem(let netem):
            return .netem(netem.encoded)
        case .pfifo(let limit):
            return .pfifo(limitPackets: limit)
        case .ingress:
            return .ingress
        }
    }
}

extension NetemSettings {
    /// netem's own rate for jitter that keeps the order: far above any link linkcond shapes
    /// (34 Gbit/s), so that it only spaces packets by their serialisation, a fraction of a
    /// microsecond, and never limits.
    static let orderKeepingRate = UInt32.max

    public var encoded: NetemOptions {
        var options = NetemOptions(
            delayMicroseconds: UInt32(clamping: delay.microseconds),
            jitterMicroseconds: UInt32(clamping: jitter.microseconds),
            lossProbability: loss.kernelProbability,
            limitPackets: limitPackets
        )
        let impairments = self.impairments
        options.delayCorrelation = jitter.isZero ? 0 : impairments.jitterCorrelation.kernelProbability
        options.lossCorrelation = loss.isZero ? 0 : impairments.lossCorrelation.kernelProbability
        options.duplicateProbability = impairments.duplicate.kernelProbability
        options.duplicateCorrelation = impairments.duplicate.isZero ? 0 : impairments.duplicateCorrelation.kernelProbability
        options.corruptProbability = impairments.corrupt.kernelProbability
        options.corruptCorrelation = impairments.corrupt.isZero ? 0 : impairments.corruptCorrelation.kernelProbability
        options.reorderProbability = impairments.reorder.kernelProbability
        options.reorderCorrelation = impairments.reorder.isZero ? 0 : impairments.reorderCorrelation.kernelProbability
        // Always a table while there is jitter, uniform too: a change in place that sent none
        // would leave the previous profile's table in force.
        options.distribution = jitter.isZero ? [] : NetemDistributionTable.table(for: impairments.jitterDistribution)
        options.rateBytesPerSecond = impairments.keepsOrder ? Self.orderKeepingRate : 0
        if let burst = impairments.burstLoss {
            options.lossProbability = 0
            options.lossCorrelation = 0
            // Every packet in a burst lost (h, the chance of getting through, 0), none between
            // (k1, the chance of loss there, 0).
            options.gilbertElliott = NetemOptions.GilbertElliott(
                p: Self.probability(burst.enterProbability), r: Self.probability(burst.leaveProbability),
                h: 0, k1: 0
            )
        }
        return options
    }

    /// A probability from 0 to 1 as netem's u32.
    static func probability(_ value: Double) -> UInt32 {
        UInt32((min(max(value, 0), 1) * Double(UInt32.max)).rounded())
    }
}

extension LossRate {
    /// netem's loss is a u32 probability: 0 never drops, `UInt32.max` always does.
    /// Computed in integers, so that a value maps to the same probability on every run.
    public var kernelProbability: UInt32 {
        let whole = UInt128(100 * LossRate.scale)
        return UInt32((UInt128(scaledPercent) * UInt128(UInt32.max) + whole / 2) / whole)
    }
}

extension ClassNode {
    public var encoded: HTBClassOptions {
        HTBClassOptions(
            rateBytesPerSecond: max(rate.bytesPerSecond, 1),
            ceilBytesPerSecond: max(ceil.bytesPerSecond, 1),
            burstBytes: burstBytes,
            ceilBurstBytes: burstBytes,
            quantumBytes: quantumBytes
        )
    }
}

extension FilterNode {
    /// The u32 filter to send; a flower node has none.
    public func encoded(redirectIndex: Int32?) -> U32Filter? {
        guard case .u32(let keys) = classifier else { return nil }
        let action: U32Action
        switch target {
        case .classify(let classID): action = .classify(classID)
        case .redirect: action = .redirect(toInterfaceIndex: redirectIndex ?? 0)
        }
        return U32Filter(priority: priority, protocolType: protocolType, keys: keys, action: action)
    }

    /// The flower filter to send; a u32 node has none, and flower filters only classify.
    public var flowerFilter: FlowerFilter? {
        guard case .flower(let handle, let key) = classifier, case .classify(let classID) = target else { return nil }
        return FlowerFilter(priority: priority, handle: handle, key: key, classID: classID)
    }
}
