@testable import Profiles
import Testing

@Suite("Pacing a trace")
struct TracePaceTests {
    /// 100 ms windows of 10, 10, 0, 0 and 5 opportunities (1.2 Mbit/s, 1.2, an outage of 200 ms,
    /// 600 kbit/s), a period of 500 ms: the opportunity written at 500 belongs to the first window.
    static let windows = try! LinkTrace(
        name: "windows", file: "/traces/windows.trace",
        timestamps: (1...9).map { UInt32($0) } + (101...110).map { UInt32($0) } + (401...405).map { UInt32($0) } + [500]
    )

    @Test("windows alike are one stretch, ending where the capacity changes")
    func stretches() {
        #expect(Self.windows.pace(at: 0) == TracePace(capacity: .kbit(1_200), rate: .kbit(1_200), endsAtMilliseconds: 200))
        #expect(Self.windows.pace(at: 199).endsAtMilliseconds == 200)
        #expect(Self.windows.pace(at: 450) == TracePace(capacity: .kbit(600), rate: .kbit(600), endsAtMilliseconds: 500))
    }

    @Test("the loop goes on counting: the stretch after the period ends a period later")
    func loops() {
        #expect(Self.windows.pace(at: 520).endsAtMilliseconds == 700)
        #expect(Self.windows.pace(at: 5_450).endsAtMilliseconds == 5_500)
    }

    @Test("an outage's rate is one packet over what is left of it, paced again at each of its windows")
    func outage() {
        let pace = Self.windows.pace(at: 250)
        #expect(pace.isOutage)
        #expect(pace.endsAtMilliseconds == 300)
        #expect(pace.rate == Bandwidth(bitsPerSecond: 80_744))
        #expect(Self.windows.pace(at: 200).rate == Bandwidth(bitsPerSecond: 60_560))
        #expect(Self.windows.pace(at: 300) == TracePace(capacity: Bandwidth(bitsPerSecond: 0), rate: Bandwidth(bitsPerSecond: 121_120), endsAtMilliseconds: 400))
    }

    @Test("a profile knows where an outage of a direction ends")
    func outageEnds() {
        let profile = Profile(name: "Recorded", uplink: LinkConditions(trace: Self.windows))
        #expect(profile.endsOutage(at: 400))
        #expect(profile.endsOutage(at: 900))
        #expect(!profile.endsOutage(at: 200))
        #expect(!profile.endsOutage(at: 300))
        #expect(!profile.endsOutage(at: 0))
        #expect(!Profile(name: "Fixed", uplink: LinkConditions(bandwidth: .mbit(1))).endsOutage(at: 400))
    }

    @Test("an outage is counted as at most a minute long, htb's cap on what a class owes")
    func outageRates() {
        #expect(LinkTrace.outageRate(lasting: 3_000) == Bandwidth(bitsPerSecond: 4_032))
        #expect(LinkTrace.outageRate(lasting: 7) == Bandwidth(bitsPerSecond: 1_730_280))
        #expect(LinkTrace.outageRate(lasting: 600_000) == Bandwidth(bitsPerSecond: 200))
        // A full-size frame (1514 bytes, as htb charges it) owes the whole outage, and less than 1% more.
        for milliseconds in [7, 100, 150, 3_000, 60_000] {
            let owedNanoseconds = 1_514 * 1_000_000_000 / LinkTrace.outageRate(lasting: milliseconds).bytesPerSecond
            #expect(owedNanoseconds >= UInt64(milliseconds) * 1_000_000)
            #expect(owedNanoseconds < UInt64(milliseconds) * 1_010_000)
            // And the rate is the fastest in whole bytes a second that does so: one byte more and
            // the frame would owe less than the outage (a 1500-byte frame's rate, 500 B/s for 3 s,
            // is not: at 501 the 1514 bytes still owe 3.022 s).
            let oneByteFaster = LinkTrace.outageRate(lasting: milliseconds).bytesPerSecond + 1
            #expect(1_514 * 1_000_000_000 / oneByteFaster < UInt64(milliseconds) * 1_000_000)
        }
    }

    @Test("a trace of one capacity never changes")
    func constant() throws {
        let steady = try LinkTrace(name: "steady", file: "/traces/steady.trace", timestamps: [1])
        #expect(steady.pace(at: 12_345) == TracePace(capacity: .mbit(12), rate: .mbit(12), endsAtMilliseconds: nil))
    }

    @Test("a paced profile has its traces' rates as bandwidths, keeps its traces, and changes when the first direction does")
    func pacedProfile() throws {
        let steady = try LinkTrace(name: "steady", file: "/traces/steady.trace", timestamps: [1])
        let profile = Profile(
            name: "Recorded",
            downlink: LinkConditions(trace: Self.windows, delay: .milliseconds(20)),
            uplink: LinkConditions(trace: steady, delay: .milliseconds(20))
        )
        let (paced, changes) = profile.paced(at: 300)
        #expect(paced.downlink.bandwidth == LinkTrace.outageRate(lasting: 100))
        #expect(paced.downlink.trace == Self.windows)
        #expect(paced.uplink.bandwidth == .mbit(12))
        #expect(changes == 400)
        #expect(profile.paced(at: 250).changesAtMilliseconds == 300, "an outage's windows each change its rate")
        #expect(paced.downlink.delay == .milliseconds(20))

        let fixed = Profile(name: "Fixed", downlink: LinkConditions(bandwidth: .mbit(2)))
        #expect(fixed.paced(at: 300) == (fixed, nil))
    }

    @Test("the shipped traces change rate where their schedules do", arguments: [
        ("steps", 0, 1_000), ("ramp", 50, 100), ("outage", 3_600, 3_700), ("outage", 6_450, 6_500), ("outage", 6_500, 13_500),
    ])
    func shipped(name: String, at elapsed: Int, endsAt: Int) throws {
        #expect(try shippedTrace(name).pace(at: elapsed).endsAtMilliseconds == endsAt)
    }
}
