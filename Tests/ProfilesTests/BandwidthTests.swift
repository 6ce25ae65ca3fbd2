import Profiles
import Testing

@Suite("Bandwidth")
struct BandwidthTests {
    @Test("parses rates with decimal prefixes", arguments: [
        ("32kbit", 32_000),
        ("2Mbit", 2_000_000),
        ("1.5Mbit", 1_500_000),
        ("10 Gbit/s", 10_000_000_000),
        ("500bit", 500),
        ("8bit", 8),
        ("780kbit", 780_000),
        ("0.5kbit", 500),
        ("100Gbit", 100_000_000_000),
        ("1.5 Mbit/s", 1_500_000),
        ("32 kbit", 32_000),
        ("  250Mbit  ", 250_000_000),
        ("+3kbit", 3_000),
    ] as [(String, UInt64)])
    func parses(text: String, bitsPerSecond: UInt64) throws {
        #expect(try Bandwidth(parsing: text).bitsPerSecond == bitsPerSecond)
    }

    @Test("bps spellings mean bits per second, not bytes", arguments: [
        ("32kbps", 32_000),
        ("2Mbps", 2_000_000),
        ("1Gbps", 1_000_000_000),
        ("64bps", 64),
        ("1.5Mbps/s", 1_500_000),
    ] as [(String, UInt64)])
    func bpsMeansBits(text: String, bitsPerSecond: UInt64) throws {
        #expect(try Bandwidth(parsing: text).bitsPerSecond == bitsPerSecond)
    }

    @Test("unit prefixes are case-insensitive", arguments: [
        "32kbit", "32Kbit", "32KBIT", "32kBit", "32KBPS", "32 KBIT/S",
    ])
    func caseInsensitiveUnits(text: String) throws {
        #expect(try Bandwidth(parsing: text) == .kbit(32))
    }

    @Test("an upper-case M is mega, never milli")
    func megaIsNotMilli() throws {
        #expect(try Bandwidth(parsing: "2mbit") == .mbit(2))
        #expect(try Bandwidth(parsing: "2MBIT") == .mbit(2))
    }

    @Test("rejects bad text with a message that names it", arguments: [
        ("32", "has no unit"),
        ("32kb", "unknown bandwidth unit 'kb'"),
        ("32kbit/h", "unknown bandwidth unit"),
        ("32 bytes", "unknown bandwidth unit 'bytes'"),
        ("0kbit", "must be more than 0"),
        ("0.0Mbit", "must be more than 0"),
        ("-5kbit", "must be more than 0"),
        ("-1Mbit", "must be more than 0"),
        ("101Gbit", "above the largest rate, 100Gbit"),
        ("1000Gbit", "above the largest rate"),
        ("4bit", "below the smallest rate, 8bit"),
        ("fast", "is not a bandwidth"),
        ("kbit", "is not a bandwidth"),
        ("1.2.3Mbit", "is not a bandwidth"),
    ])
    func rejects(text: String, fragment: String) throws {
        let error = try #require(unitError { () throws(UnitParseError) in try Bandwidth(parsing: text) })
        #expect(error.message.contains(fragment))
        #expect(error.message.contains("'\(text)'"), "the message should quote the offending text")
        #expect(error.description == error.message)
    }

    @Test("an empty value asks for a bandwidth", arguments: ["", "   "])
    func rejectsEmpty(text: String) throws {
        let error = try #require(unitError { () throws(UnitParseError) in try Bandwidth(parsing: text) })
        #expect(error.message.contains("empty bandwidth"))
        #expect(error.message.contains("32kbit"), "the message should show an example")
    }

    @Test("the maximum itself is accepted, one bit more is not")
    func maximumBoundary() throws {
        #expect(try Bandwidth(parsing: "100Gbit") == Bandwidth.maximum)
        #expect(unitError { () throws(UnitParseError) in try Bandwidth(parsing: "100000000001bit") } != nil)
    }

    @Test("formats with the largest unit that keeps the number short", arguments: [
        (32_000, "32kbit"),
        (1_500_000, "1.5Mbit"),
        (250_000_000, "250Mbit"),
        (500, "500bit"),
        (999, "999bit"),
        (1_000, "1kbit"),
        (1_001, "1.001kbit"),
        (12_345, "12.345kbit"),
        (780_000, "780kbit"),
        (2_000_000, "2Mbit"),
        (1_234_000, "1.234Mbit"),
        (10_000_000_000, "10Gbit"),
        (2_500_000_000, "2.5Gbit"),
        (100_000_000_000, "100Gbit"),
    ] as [(UInt64, String)])
    func formats(bitsPerSecond: UInt64, text: String) {
        #expect(Bandwidth(bitsPerSecond: bitsPerSecond).description == text)
    }

    @Test("formatting keeps every decimal, so the text reads back as the same rate")
    func formatIsExact() throws {
        #expect(Bandwidth(bitsPerSecond: 1_234_567).description == "1.234567Mbit")
        #expect(Bandwidth(bitsPerSecond: 1_234_500).description == "1.2345Mbit")
        #expect(Bandwidth(bitsPerSecond: 999_999).description == "999.999kbit")
        #expect(Bandwidth(bitsPerSecond: 999_999_999).description == "999.999999Mbit")
        for value: UInt64 in [8, 999, 1_001, 1_234_567, 999_999_999, 1_000_000_001, 99_999_999_999] {
            #expect(try Bandwidth(parsing: Bandwidth(bitsPerSecond: value).description).bitsPerSecond == value)
        }
    }

    @Test("parsing is exact decimal arithmetic, not binary floating point")
    func parseIsExact() throws {
        #expect(try Bandwidth(parsing: "1.2345Mbit").bitsPerSecond == 1_234_500)
        #expect(try Bandwidth(parsing: "0.1kbit").bitsPerSecond == 100)
        #expect(try Bandwidth(parsing: "2.675kbit").bitsPerSecond == 2_675)
    }

    @Test("parse(format(x)) == x for values with at most three decimals in their unit")
    func roundTrip() throws {
        var values: [UInt64] = Array(8...999)
        for factor: UInt64 in [1_000, 1_000_000, 1_000_000_000] {
            // Mantissas with up to three decimals: 1.000 ... 999.999 in the unit.
            for thousandths: UInt64 in stride(from: 1_000, through: 999_999, by: 997) {
                values.append(thousandths * factor / 1_000)
            }
            values += [1, 8, 32, 33, 40, 50, 56, 100, 128, 256, 330, 780].map { $0 * factor }
        }
        values = values.filter { $0 <= Bandwidth.maximum.bitsPerSecond }
        #expect(values.count > 3_000)
        for value in values {
            let bandwidth = Bandwidth(bitsPerSecond: value)
            let reparsed = try Bandwidth(parsing: bandwidth.description)
            #expect(reparsed == bandwidth, "\(value) formatted as \(bandwidth)")
        }
    }

    @Test("orders by rate and converts to bytes")
    func comparisonAndBytes() {
        #expect(Bandwidth.kbit(32) < Bandwidth.kbit(33))
        #expect(Bandwidth.mbit(1) > Bandwidth.kbit(999))
        #expect(Bandwidth.gbit(1) == Bandwidth.mbit(1_000))
        #expect(Bandwidth.kbit(32).bytesPerSecond == 4_000)
        #expect(Bandwidth.maximum == Bandwidth(bitsPerSecond: 100_000_000_000))
    }
}
