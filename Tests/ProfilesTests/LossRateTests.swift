import Profiles
import Testing

@Suite("LossRate")
struct LossRateTests {
    @Test("parses percentages", arguments: [
        ("90%", 90.0),
        ("0.5%", 0.5),
        ("100%", 100.0),
        ("0%", 0.0),
        ("10 %", 10.0),
        (" 1% ", 1.0),
        ("12.345%", 12.345),
    ])
    func parses(text: String, percent: Double) throws {
        #expect(try LossRate(parsing: text).percent == percent)
    }

    @Test("rejects bad text with a message that names it", arguments: [
        ("120%", "out of range"),
        ("100.1%", "out of range"),
        ("-1%", "out of range"),
        ("0.9", "has no unit"),
        ("10", "has no unit"),
        ("10pct", "unknown loss unit 'pct'"),
        ("10 percent", "unknown loss unit 'percent'"),
        ("lots", "is not a loss"),
    ])
    func rejects(text: String, fragment: String) throws {
        let error = try #require(unitError { () throws(UnitParseError) in try LossRate(parsing: text) })
        #expect(error.message.contains(fragment))
        #expect(error.message.contains("'\(text)'"), "the message should quote the offending text")
    }

    @Test("a fraction without % is refused and the likely meaning shown")
    func fractionWithoutPercent() throws {
        let error = try #require(unitError { () throws(UnitParseError) in try LossRate(parsing: "0.9") })
        #expect(error.message.contains("0.9%"))
    }

    @Test("out of range names the bounds")
    func outOfRangeNamesBounds() throws {
        let error = try #require(unitError { () throws(UnitParseError) in try LossRate(parsing: "120%") })
        #expect(error.message.contains("0%") && error.message.contains("100%"))
    }

    @Test("formats as a short percentage", arguments: [
        (90.0, "90%"),
        (0.5, "0.5%"),
        (100.0, "100%"),
        (0.0, "0%"),
        (10.0, "10%"),
        (12.345, "12.345%"),
        (33.3333, "33.3333%"),
        (0.0004, "0.0004%"),
    ])
    func formats(percent: Double, text: String) {
        #expect(LossRate(percent: percent).description == text)
    }

    @Test("parse(format(x)) == x", arguments: [0.0, 0.001, 0.5, 1, 2.5, 10, 33.3, 50, 90, 99.999, 100])
    func roundTrip(percent: Double) throws {
        let loss = LossRate(percent: percent)
        #expect(try LossRate(parsing: loss.description) == loss)
    }

    @Test("parsing keeps every decimal up to ten, exactly")
    func exact() throws {
        #expect(try LossRate(parsing: "0.0004%").scaledPercent == 4_000_000)
        #expect(try LossRate(parsing: "0.0000000001%").scaledPercent == 1)
        #expect(try LossRate(parsing: "100%") == .total)
        #expect(try LossRate(parsing: "0.0004%").description == "0.0004%")
        #expect(unitError { () throws(UnitParseError) in try LossRate(parsing: "0.00000000001%") }?.message.contains("decimals") == true)
    }

    @Test("named values, fraction and order")
    func namedValues() {
        #expect(LossRate.none.isZero)
        #expect(LossRate.total.percent == 100)
        #expect(LossRate(percent: 90).fraction == 0.9)
        #expect(LossRate(percent: 0.5) < LossRate(percent: 1))
        #expect(!LossRate(percent: 0.5).isZero)
    }
}
