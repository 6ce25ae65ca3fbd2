import ControlAPI
@testable import linkcond
import Testing

@Suite("status: the trace line")
struct TraceLineTests {
    @Test("Each trace-driven direction's rate now and until when; an outage says so; a direction without a trace is left out")
    func traceLine() {
        let trace = TracePlaybackDocument(
            elapsedMilliseconds: 12_345, monotonicStartMilliseconds: 1_000,
            downlink: TraceRateDocument(capacity: "9.6Mbit", rate: "9.6Mbit", changesAtMilliseconds: 13_000),
            uplink: TraceRateDocument(capacity: "0bit", rate: "4kbit", changesAtMilliseconds: 16_500)
        )
        #expect(Format.traceLine(trace) == "trace: 12.3s in; down 9.6Mbit now (until 13.0s); up outage, 4kbit (until 16.5s)")

        let steady = TracePlaybackDocument(
            elapsedMilliseconds: 500, monotonicStartMilliseconds: 1_000,
            downlink: TraceRateDocument(capacity: "12Mbit", rate: "12Mbit", changesAtMilliseconds: nil), uplink: nil
        )
        #expect(Format.traceLine(steady) == "trace: 0.5s in; down 12Mbit now (steady)")
    }
}
