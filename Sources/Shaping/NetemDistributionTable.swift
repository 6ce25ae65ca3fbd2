#if canImport(Glibc)
import Glibc
#endif
import Profiles

/// The tables netem draws its jitter from: 4096 values of the distribution's inverse
/// function, in units of 1/8192 of the jitter (netem's NETEM_DIST_SCALE), clamped to 16 bits.
/// A packet's delay is `delay + jitter × value / 8192` for a value picked at random.
///
/// Computed here, the way iproute2's generators compute the files it installs in
/// /usr/lib/tc, so that linkcond needs neither iproute2's files nor tc.
enum NetemDistributionTable {
    static let size = 4096
    static let scale = 8192.0

    /// The table for `distribution`, computed once per kind.
    static func table(for distribution: JitterDistribution) -> [Int16] {
        switch distribution {
        case .uniform: return uniform
        case .normal: return normal
        case .pareto: return pareto
        case .paretoNormal: return paretoNormal
        }
    }

    /// Evenly spread over ±1: netem's own uniform jitter, as a table, so that a change in
    /// place from another distribution replaces its table.
    static let uniform: [Int16] = (0..<size).map { index in
        quantized(-1 + 2 * (Double(index) + 0.5) / Double(size))
    }

    /// The standard normal: the jitter is the standard deviation.
    static let normal: [Int16] = (0..<size).map { quantized(normalQuantile(probability(of: $0))) }

    /// Pareto with shape 3, shifted and scaled to mean 0 and a spread comparable to the normal
    /// one: most packets a little early, a long tail of late ones.
    static let pareto: [Int16] = (0..<size).map { quantized(paretoValue(probability(of: $0))) }

    /// A quarter normal, three quarters Pareto, value by value: the mix measured on real links.
    static let paretoNormal: [Int16] = (0..<size).map { index in
        let p = probability(of: index)
        return quantized((normalQuantile(p) + 3 * paretoValue(p)) / 4)
    }

    /// The probability the value at `index` stands for: the middle of its slice.
    private static func probability(of index: Int) -> Double {
        (Double(index) + 0.5) / Double(size)
    }

    /// Pareto (shape 3) at probability `p`, from its tail end: `(1 - p)^(-1/3)`, less its
    /// mean of 1.5, times 4/3.
    private static func paretoValue(_ p: Double) -> Double {
        (pow(1 - p, -1.0 / 3.0) - 1.5) * 4.0 / 3.0
    }

    /// The standard normal's quantile, by bisection on `erf`: 60 halvings are far below the
    /// table's resolution, and the tables are computed once.
    static func normalQuantile(_ p: Double) -> Double {
        var low = -10.0, high = 10.0
        for _ in 0..<60 {
            let middle = (low + high) / 2
            if 0.5 * (1 + erf(middle / 2.0.squareRoot())) < p { low = middle } else { high = middle }
        }
        return (low + high) / 2
    }

    private static func quantized(_ value: Double) -> Int16 {
        Int16(min(max((value * scale).rounded(), Double(Int16.min)), Double(Int16.max)))
    }
}
