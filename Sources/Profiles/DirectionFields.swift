/// Reading one direction's fields (`downlink:`, `uplink:`, a scenario step's own values), and the
/// rules between them: a field that needs another, and fields that exclude each other.
extension ProfileParser {
    static let burstLossFields = ["average", "length"]

    /// Reads the field `name` of the direction `section` into `conditions`; a `trace:` reads its
    /// file as `traces` allows.
    static func readDirectionField(
        _ name: String, of section: YAMLSection, traces: TraceFileAccess, into conditions: inout LinkConditions
    ) throws(ProfileError) {
        switch name {
        case "bandwidth":
            conditions.bandwidth = try section.value(name, default: nil) { text throws(UnitParseError) in try Bandwidth(parsing: text) }
        case "trace":
            conditions.trace = try trace(name, of: section, access: traces)
        case "delay":
            conditions.delay = try section.value(name, default: .zero, Delay.init(parsing:))
        case "jitter":
            conditions.jitter = try section.value(name, default: .zero, Delay.init(parsing:))
        case "loss":
            conditions.loss = try section.value(name, default: .none, LossRate.init(parsing:))
        case "jitter-distribution":
            conditions.impairments.jitterDistribution = try section.value(name, default: .uniform, JitterDistribution.init(parsing:))
        case "jitter-correlation":
            conditions.impairments.jitterCorrelation = try percentage(name, of: "jitter correlation", in: section)
        case "keep-order":
            conditions.impairments.keepsOrder = try boolean(name, in: section)
        case "loss-correlation":
            conditions.impairments.lossCorrelation = try percentage(name, of: "loss correlation", in: section)
        case "burst-loss":
            conditions.impairments.burstLoss = try burstLoss(name, in: section)
        case "duplicate":
            conditions.impairments.duplicate = try percentage(name, of: "duplication", in: section)
        case "duplicate-correlation":
            conditions.impairments.duplicateCorrelation = try percentage(name, of: "duplication correlation", in: section)
        case "corrupt":
            conditions.impairments.corrupt = try percentage(name, of: "corruption", in: section)
        case "corrupt-correlation":
            conditions.impairments.corruptCorrelation = try percentage(name, of: "corruption correlation", in: section)
        case "reorder":
            conditions.impairments.reorder = try percentage(name, of: "reordering", in: section)
        case "reorder-correlation":
            conditions.impairments.reorderCorrelation = try percentage(name, of: "reordering correlation", in: section)
        case "queue":
            conditions.impairments.queue = try section.value(name, default: nil) { text throws(UnitParseError) in try QueueLimit(parsing: text) }
        default:
            // `rejectUnknownFields` has refused every other name.
            break
        }
    }

    /// Refuses values that cannot go together: a field that needs another (a correlation without
    /// what it correlates, `queue` without `bandwidth` or `trace`, …) or that excludes one
    /// (`trace` with `bandwidth`, `burst-loss` with `loss`, `keep-order` with `reorder`). Each
    /// problem is reported on the line of the field that needs or excludes the other; of
    /// several, the first by line.
    static func checkDirection(_ conditions: LinkConditions, section: YAMLSection) throws(ProfileError) {
        var problems: [ProfileError] = []
        func line(of field: String) -> Int? {
            section.keys.first { $0.name == field }?.line
        }
        func refuse(_ field: String, _ message: String) {
            guard let line = line(of: field) else { return }
            problems.append(ProfileError(code: .badValue, file: section.file, line: line, field: section.dotted(field), message: message))
        }
        func onLine(_ field: String) -> String {
            line(of: field).map { " (line \($0))" } ?? ""
        }

        let impairments = conditions.impairments
        let hasJitter = !conditions.jitter.isZero
        if conditions.trace != nil, conditions.bandwidth != nil {
            refuse("trace", "cannot be combined with bandwidth\(onLine("bandwidth")): the trace gives the rate, window by window; leave bandwidth out")
        }
        if conditions.jitter > conditions.delay {
            refuse("jitter", "jitter \(conditions.jitter) is larger than the delay \(conditions.delay); packets cannot arrive before they were sent")
        }
        if impairments.jitterDistribution != .uniform, !hasJitter {
            refuse("jitter-distribution", "a distribution shapes the jitter; this direction has none (add jitter:, e.g. jitter: 10ms)")
        }
        if !impairments.jitterCorrelation.isZero, !hasJitter {
            refuse("jitter-correlation", "a correlation ties each packet's jitter to the one before; this direction has no jitter (add jitter:, e.g. jitter: 10ms)")
        }
        if impairments.keepsOrder, !hasJitter {
            refuse("keep-order", "changes nothing without jitter: packets leave in order already")
        }
        if impairments.keepsOrder, !impairments.reorder.isZero {
            refuse(
                "keep-order",
                "cannot be combined with reorder\(onLine("reorder")): keep-order holds every packet behind the one before it, reorder sends some ahead of it"
            )
        }
        if impairments.burstLoss != nil, !conditions.loss.isZero {
            refuse("burst-loss", "burst-loss replaces loss\(onLine("loss")): its average is the share of packets lost; leave loss out")
        }
        if impairments.burstLoss != nil, !impairments.lossCorrelation.isZero {
            refuse("burst-loss", "burst-loss replaces loss-correlation\(onLine("loss-correlation")): its bursts are the correlation; leave loss-correlation out")
        }
        if !impairments.lossCorrelation.isZero, conditions.loss.isZero, impairments.burstLoss == nil {
            refuse("loss-correlation", "a correlation makes losses cluster; this direction has no loss (add loss:, or use burst-loss for losses in bursts)")
        }
        if !impairments.duplicateCorrelation.isZero, impairments.duplicate.isZero {
            refuse("duplicate-correlation", "a correlation ties each packet's chance of duplication to the one before; this direction duplicates nothing (add duplicate:)")
        }
        if !impairments.corruptCorrelation.isZero, impairments.corrupt.isZero {
            refuse("corrupt-correlation", "a correlation ties each packet's chance of corruption to the one before; this direction corrupts nothing (add corrupt:)")
        }
        if !impairments.reorder.isZero, conditions.delay.isZero {
            refuse("reorder", "a reordered packet skips the delay to overtake the ones before it; with no delay nothing can overtake (add delay:, e.g. delay: 20ms)")
        }
        if !impairments.reorderCorrelation.isZero, impairments.reorder.isZero {
            refuse("reorder-correlation", "a correlation ties each packet's chance of reordering to the one before; this direction reorders nothing (add reorder:)")
        }
        if impairments.queue != nil, conditions.bandwidth == nil, conditions.trace == nil {
            refuse("queue", "a queue fills only behind a bandwidth limit or a trace; this direction has neither (add bandwidth:, e.g. bandwidth: 10Mbit, or trace:)")
        }
        if let first = problems.min(by: { $0.line < $1.line }) {
            throw first
        }
    }

    private static func percentage(_ field: String, of quantity: String, in section: YAMLSection) throws(ProfileError) -> LossRate {
        try section.value(field, default: .none) { text throws(UnitParseError) in
            try LossRate(parsingPercentage: text, of: quantity)
        }
    }

    /// `true` or `false` (also `True`, `TRUE`, `False`, `FALSE`, as YAML 1.2 writes them).
    private static func boolean(_ field: String, in section: YAMLSection) throws(ProfileError) -> Bool {
        guard let node = section.fields[field] else { return false }
        let text = try section.scalar(node, field: field).trimmingSpaces()
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            throw ProfileError(
                code: .badValue, file: section.file, line: node.line, field: section.dotted(field),
                message: "'\(text)' is not true or false; write \(field): true or \(field): false"
            )
        }
    }

    /// `burst-loss: { average: 2%, length: 4 }`: both required, nothing else allowed.
    private static func burstLoss(_ field: String, in section: YAMLSection) throws(ProfileError) -> BurstLoss? {
        guard let node = section.fields[field] else { return nil }
        let keyLine = section.keys.first { $0.name == field }?.line ?? node.line
        let burst = try YAMLSection(
            node: node, path: section.dotted(field), file: section.file,
            notAMapping: "must be a mapping of average and length, like burst-loss: { average: 2%, length: 4 }"
        )
        try burst.rejectUnknownFields(allowed: burstLossFields)
        guard let averageNode = burst.fields["average"] else {
            throw ProfileError(
                code: .missingField, file: section.file, line: keyLine, field: burst.dotted("average"),
                message: "missing; the share of packets lost, like average: 2%"
            )
        }
        guard burst.fields["length"] != nil else {
            throw ProfileError(
                code: .missingField, file: section.file, line: keyLine, field: burst.dotted("length"),
                message: "missing; how many packets are lost in a row on average, like length: 4"
            )
        }
        let average = try burst.value("average", default: .none) { text throws(UnitParseError) in
            try LossRate(parsingPercentage: text, of: "burst loss average")
        }
        func refuseAverage(_ message: String) -> ProfileError {
            ProfileError(code: .badValue, file: section.file, line: averageNode.line, field: burst.dotted("average"), message: message)
        }
        guard !average.isZero else {
            throw refuseAverage("must be more than 0% (leave burst-loss out for no loss)")
        }
        guard average < .total else {
            throw refuseAverage("must be less than 100%; to lose every packet, write loss: 100% instead")
        }
        let length = try burst.value("length", default: 1, burstLength(parsing:))
        let burstLoss = BurstLoss(average: average, meanBurstPackets: length)
        // Exactly 100% is possible (one packet passes between bursts); allow for rounding.
        guard burstLoss.enterProbability <= 1 + 1e-12 else {
            let packets = length.formattedPackets
            throw refuseAverage(
                "an average of \(average) with bursts of \(packets) packets would need bursts to begin more often than every packet: "
                    + "bursts of \(packets) packets allow at most \(highestAverage(meanBurstPackets: length)), "
                    + "and \(average) needs bursts of at least \(shortestBurst(average: average)) packets"
            )
        }
        return burstLoss
    }

    /// The mean number of packets lost in a row: `4`, `2.5`, `4 packets`; 1 to 1000.
    static func burstLength(parsing text: String) throws(UnitParseError) -> Double {
        let quantity = try QuantityText(text, kind: "burst length", example: "4 or 2.5 (packets)")
        let unit = quantity.unit.lowercased()
        guard unit.isEmpty || unit == "packets" || unit == "packet" else {
            throw UnitParseError("unknown unit '\(quantity.unit)' in '\(text)'; write the mean number of packets lost in a row, like 4 or 2.5 packets")
        }
        let number = quantity.number
        let value = number.isNegative ? -1 : Double("\(number.digits)e-\(number.fractionDigits)") ?? -1
        guard value >= 1, value <= 1000 else {
            throw UnitParseError("burst length '\(text)' is out of range; a burst is 1 to 1000 packets long on average (each loses at least one)")
        }
        return value
    }

    /// The highest average bursts of `meanBurstPackets` can produce, `L / (L + 1)`, rounded down
    /// to a hundredth of a percent so that it can be written back: `66.66%`.
    private static func highestAverage(meanBurstPackets length: Double) -> String {
        let hundredths = UInt64((length / (length + 1) * 10_000 + 1e-9).rounded(.down))
        return LossRate(scaledPercent: hundredths * (LossRate.scale / 100)).description
    }

    /// The shortest mean burst that allows `average`, `a / (1 − a)`, rounded up to a tenth: `9`.
    private static func shortestBurst(average: LossRate) -> String {
        let fraction = average.fraction
        return ((fraction / (1 - fraction) * 10 - 1e-9).rounded(.up) / 10).formattedPackets
    }
}

extension JitterDistribution {
    /// `uniform`, `normal`, `pareto` or `paretonormal`, in any case.
    init(parsing text: String) throws(UnitParseError) {
        let name = text.trimmingSpaces()
        if let distribution = JitterDistribution(rawValue: name.lowercased()) {
            self = distribution
            return
        }
        let names = Self.allCases.map(\.rawValue)
        var message = "unknown distribution '\(name)'; choose uniform, normal, pareto or paretonormal"
        if let suggestion = suggestedField(for: name, among: names) {
            message = "unknown distribution '\(name)'; did you mean '\(suggestion)'? (choose uniform, normal, pareto or paretonormal)"
        }
        throw UnitParseError(message)
    }
}
