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
    public var encoded: NetemOptions {
        NetemOptions(
            delayMicroseconds: UInt32(clamping: delay.microseconds),
            jitterMicroseconds: UInt32(clamping: jitter.microseconds),
            lossProbability: loss.kernelProbability,
            limitPackets: limitPackets
        )
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
