import Netlink
import Profiles
@testable import Shaping
import Testing

@Suite("Impairments in netem's units")
struct ImpairmentEncodingTests {
    static func settings(jitter: Delay = .zero, loss: LossRate = .none, _ impairments: Impairments) -> NetemSettings {
        NetemSettings(delay: .milliseconds(50), jitter: jitter, loss: loss, limitPackets: 100, impairments: impairments)
    }

    @Test("Probabilities and correlations become netem's u32s; correlations of nothing are not sent")
    func probabilities() {
        let options = Self.settings(jitter: .milliseconds(10), loss: LossRate(percent: 10), Impairments(
            jitterCorrelation: LossRate(percent: 25), lossCorrelation: LossRate(percent: 25),
            duplicate: LossRate(percent: 1), corrupt: .total, reorder: LossRate(percent: 50), reorderCorrelation: LossRate(percent: 10)
        )).encoded
        #expect(options.delayCorrelation == LossRate(percent: 25).kernelProbability)
        #expect(options.lossCorrelation == LossRate(percent: 25).kernelProbability)
        #expect(options.duplicateProbability == LossRate(percent: 1).kernelProbability)
        #expect(options.duplicateCorrelation == 0)
        #expect(options.corruptProbability == UInt32.max)
        #expect(options.reorderProbability == UInt32.max / 2 + 1)
        #expect(options.reorderCorrelation == LossRate(percent: 10).kernelProbability)
        #expect(options.gilbertElliott == nil)
        #expect(options.rateBytesPerSecond == 0)
    }

    @Test("A table is sent whenever there is jitter, uniform too, and none without")
    func tables() {
        #expect(Self.settings(Impairments()).encoded.distribution.isEmpty)
        let uniform = Self.settings(jitter: .milliseconds(10), Impairments()).encoded.distribution
        #expect(uniform.count == 4096)
        #expect(uniform.first! < -8180 && uniform.last! > 8180)
        let normal = Self.settings(jitter: .milliseconds(10), Impairments(jitterDistribution: .normal)).encoded.distribution
        #expect(normal == NetemDistributionTable.normal)
    }

    @Test("The normal table is the standard normal's quantiles in 1/8192")
    func normalTable() {
        let table = NetemDistributionTable.normal
        #expect(table == table.sorted())
        // Quantiles 50% and 84.13% are 0 and 1 standard deviation.
        #expect(abs(Int(table[2048])) <= 3)
        #expect(abs(Int(table[3446]) - 8192) < 20)
        #expect(zip(table, table.reversed()).allSatisfy { abs(Int($0) + Int($1)) <= 1 })
        let mean = Double(table.reduce(0) { $0 + Int($1) }) / Double(table.count)
        #expect(abs(mean) < 1)
    }

    @Test("Pareto's table has mean about 0, most values below it and a long tail clamped to 16 bits")
    func paretoTable() {
        let table = NetemDistributionTable.pareto
        #expect(table == table.sorted())
        #expect(table.last == Int16.max)
        #expect(table.filter { $0 < 0 }.count > 2048)
        #expect(table.first! > -8192)
    }

    @Test("Burst loss is a Gilbert model: p from the average and the length, r = 1/length, all lost in a burst, none between")
    func burstLoss() {
        let burst = BurstLoss(average: LossRate(percent: 5), meanBurstPackets: 4)
        let options = Self.settings(loss: LossRate(percent: 3), Impairments(lossCorrelation: LossRate(percent: 20), burstLoss: burst)).encoded
        let model = try! #require(options.gilbertElliott)
        #expect(model.r == NetemSettings.probability(0.25))
        #expect(abs(Double(model.p) / Double(UInt32.max) - 0.25 * 0.05 / 0.95) < 1e-9)
        #expect(model.h == 0 && model.k1 == 0)
        #expect(options.lossProbability == 0 && options.lossCorrelation == 0)
        #expect(abs(burst.enterProbability / (burst.enterProbability + burst.leaveProbability) - 0.05) < 1e-12)
    }

    @Test("Jitter that keeps the order sets netem's own rate, far above the link")
    func keepOrder() {
        #expect(Self.settings(jitter: .milliseconds(10), Impairments(keepsOrder: true)).encoded.rateBytesPerSecond == UInt32.max)
    }

    @Test("A queue of its own is the pfifo below netem, exactly, in full-size frames; netem holds it and its delay line")
    func queue() {
        let planner = Planner()
        func limits(_ queue: QueueLimit?) -> (netem: UInt32, queue: UInt32) {
            Planner.queueLimits(LinkConditions(bandwidth: .mbit(4), delay: .milliseconds(10), impairments: Impairments(queue: queue)), extraDelay: .zero)
        }
        // 4 Mbit/s is 500 000 B/s: 50 ms of it is 25 000 B, 16.5 frames.
        #expect(limits(.packets(20)).queue == 20)
        #expect(limits(.bytes(15140)).queue == 10)
        #expect(limits(.milliseconds(50)).queue == 17)
        #expect(limits(nil).queue > limits(.milliseconds(200)).queue)
        // The 10 ms delay line holds 5000 B, 78.1 small frames, beside the queue.
        #expect(limits(.packets(2000)).netem == 2079)
        #expect(limits(.packets(20)).netem == Planner.netemLimitFloor)
        // The queue is the leaf's child, not one of netem's impairments.
        let plan = planner.netem(LinkConditions(bandwidth: .mbit(4), impairments: Impairments(queue: .packets(5))), extraDelay: .zero, limitPackets: 1000)
        #expect(plan.impairments.queue == nil)
    }
}
