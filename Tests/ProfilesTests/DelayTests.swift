import Profiles
import Testing

@Suite("Delay")
struct DelayTests {
    @Test("parses durations", arguments: [
        ("100ms", 100_000),
        ("1.5s", 1_500_000),
        ("250us", 250),
        ("250µs", 250),
        ("250usec", 250),
        ("100msec", 100_000),
        ("2sec", 2_000_000),
        ("1.5ms", 1_500),
        ("0.0005s", 500),
        ("3000ms", 3_000_000),
        ("60s", 60_000_000),
        ("100 ms", 100_000),
        (" 5ms ", 5_000),
        ("100MS", 100_000),
        ("1S", 1_000_000),
        ("0ms", 0),
        ("0s", 0),
    ] as [(String, UInt64)])
    func parses(text: String, microseconds: UInt64) throws {
        #expect(try Delay(parsing: text).microseconds == microseconds)
    }

    @Test("a bare zero needs no unit", arguments: ["0", "0.0", " 0 "])
    func bareZero(text: String) throws {
        let delay = try Delay(parsing: text)
        #expect(delay == .zero)
        #expect(delay.isZero)
    }

    @Test("rejects bad text with a message that names it", arguments: [
        ("-5ms", "is negative"),
        ("-1", "is negative"),
        ("100", "has no unit"),
        ("0.5", "has no unit"),
        ("5min", "unknown time unit 'min'"),
        ("5m", "unknown time unit 'm'"),
        ("1h", "unknown time unit 'h'"),
        ("61s", "longer than the longest delay, 60s"),
        ("60001ms", "longer than the longest delay"),
        ("60.5s", "longer than the longest delay"),
        ("soon", "is not a duration"),
        ("ms", "is not a duration"),
    ])
    func rejects(text: String, fragment: String) throws {
        let error = try #require(unitError { () throws(UnitParseError) in try Delay(parsing: text) })
        #expect(error.message.contains(fragment))
        #expect(error.message.contains("'\(text)'"), "the message should quote the offending text")
    }

    @Test("a missing unit suggests how to write one")
    func missingUnitShowsExample() throws {
        let error = try #require(unitError { () throws(UnitParseError) in try Delay(parsing: "100") })
        #expect(error.message.contains("100ms"))
    }

    @Test("an empty value asks for a duration")
    func rejectsEmpty() throws {
        let error = try #require(unitError { () throws(UnitParseError) in try Delay(parsing: "") })
        #expect(error.message.contains("empty duration"))
    }

    @Test("formats in the unit people write", arguments: [
        (0, "0ms"),
        (100_000, "100ms"),
        (1_500_000, "1.5s"),
        (250, "250us"),
        (999, "999us"),
        (1_000, "1ms"),
        (1_001, "1.001ms"),
        (1_500, "1.5ms"),
        (999_999, "999.999ms"),
        (1_000_000, "1s"),
        (3_000_000, "3s"),
        (1_250_000, "1250ms"),
        (1_000_001, "1000.001ms"),
        (60_000_000, "60s"),
    ] as [(UInt64, String)])
    func formats(microseconds: UInt64, text: String) {
        #expect(Delay(microseconds: microseconds).description == text)
    }

    @Test("parse(format(x)) == x for every microsecond value up to the maximum")
    func roundTrip() throws {
        var values: [UInt64] = Array(0...2_000)
        values += stride(from: 2_001, through: Delay.maximum.microseconds, by: 997)
        values += [100_000, 1_500_000, 59_999_999, 60_000_000]
        for value in values {
            let delay = Delay(microseconds: value)
            #expect(try Delay(parsing: delay.description) == delay, "\(value)us formatted as \(delay)")
        }
    }

    @Test("constructors, arithmetic and order")
    func constructorsAndArithmetic() {
        #expect(Delay.milliseconds(100).microseconds == 100_000)
        #expect(Delay.seconds(2).microseconds == 2_000_000)
        #expect(Delay.maximum == .seconds(60))
        #expect(Delay.milliseconds(100) + .milliseconds(200) == .milliseconds(300))
        #expect(Delay.milliseconds(1) < .seconds(1))
        #expect(Delay.milliseconds(1_500).seconds == 1.5)
        #expect(!Delay.milliseconds(1).isZero)
    }
}
