import Foundation
@testable import Profiles
import Testing

/// The trace in `text`, read as the file `trace.txt`.
func trace(_ text: String) throws(TraceError) -> LinkTrace {
    try LinkTrace(parsing: text, name: "trace", file: "trace.txt")
}

/// The error reading `text` as the file `trace.txt`, or `nil` when it is a valid trace.
func traceError(_ text: String) -> TraceError? {
    do {
        _ = try trace(text)
        return nil
    } catch {
        return error
    }
}

/// One line per timestamp.
func traceText(_ timestamps: some Sequence<Int>) -> String {
    timestamps.map { "\($0)\n" }.joined()
}

/// A synthetic trace shipped in `traces/`, read from the repository.
func shippedTrace(_ name: String) throws -> LinkTrace {
    try LinkTrace(contentsOfFile: repositoryRoot.appendingPathComponent("traces/\(name).trace").path)
}

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

@Suite("LinkTrace parsing")
struct LinkTraceParsingTests {
    @Test("reads several opportunities in one millisecond, and the last timestamp is the period")
    func severalPerMillisecond() throws {
        let parsed = try trace("1\n1\n2\n")
        #expect(parsed.timestamps == [1, 1, 2])
        #expect(parsed.periodMilliseconds == 2)
        #expect(parsed.opportunityCount == 3)
        #expect(parsed.name == "trace")
        #expect(parsed.file == "trace.txt")
        // Three 1500-byte opportunities every 2 ms.
        #expect(parsed.meanCapacity == .mbit(18))
    }

    @Test("a single line 1 is a 12 Mbit/s link, looping every millisecond")
    func oneLine() throws {
        let parsed = try trace("1\n")
        #expect(parsed.periodMilliseconds == 1)
        #expect(parsed.meanCapacity == .mbit(12))
        #expect(parsed.windows(widthMilliseconds: 100) == [
            TraceWindow(startMilliseconds: 0, lengthMilliseconds: 1, opportunities: 1, capacity: .mbit(12)),
        ])
        #expect(parsed.window(containing: 12_345, widthMilliseconds: 100).capacity == .mbit(12))
    }

    @Test("spaces, tabs, a carriage return and a missing last newline are allowed; 0 may start a trace")
    func lenientLines() throws {
        #expect(try trace(" 0\r\n\t3 \r\n5").timestamps == [0, 3, 5])
        #expect(try trace("007\n").timestamps == [7])
    }

    @Test("a trace from code is checked as a file is, line by line")
    func fromTimestamps() throws {
        let made = try LinkTrace(name: "made", file: "made.trace", timestamps: [1, 1, 2])
        #expect(made == (try LinkTrace(parsing: "1\n1\n2\n", name: "made", file: "made.trace")))
        let error = try #require(throws: TraceError.self) { try LinkTrace(name: "x", file: "x.trace", timestamps: [4, 5, 3]) }
        #expect(error.line == 3)
        #expect(error.message.contains("3 is before 5"))
        #expect(throws: TraceError.self) { try LinkTrace(name: "x", file: "x.trace", timestamps: []) }
        #expect(throws: TraceError.self) { try LinkTrace(name: "x", file: "x.trace", timestamps: [UInt32(LinkTrace.maximumPeriodMilliseconds) + 1]) }
    }

    struct ErrorCase: CustomTestStringConvertible, Sendable {
        var label: String
        var text: String
        var line: Int
        var fragment: String
        var testDescription: String { label }
    }

    @Test("every problem is reported on its line", arguments: [
        ErrorCase(label: "a word", text: "1\n2\nabc\n", line: 3, fragment: "'abc' is not a whole number; each line is the millisecond of one 1500-byte delivery opportunity"),
        ErrorCase(label: "a decimal", text: "1.5\n", line: 1, fragment: "'1.5' is not a whole number"),
        ErrorCase(label: "a plus sign", text: "+3\n", line: 1, fragment: "'+3' is not a whole number"),
        ErrorCase(label: "a unit", text: "3ms\n", line: 1, fragment: "'3ms' is not a whole number"),
        ErrorCase(label: "two numbers on a line", text: "1\n2 3\n", line: 2, fragment: "'2 3' is not a whole number"),
        ErrorCase(label: "a minus alone", text: "-\n", line: 1, fragment: "'-' is not a whole number"),
        ErrorCase(label: "negative", text: "1\n-5\n", line: 2, fragment: "'-5' is negative"),
        ErrorCase(label: "decreasing", text: "1\n3\n3\n2\n4\n", line: 4, fragment: "2 is before 3 on the line above; timestamps never decrease"),
        ErrorCase(label: "a blank line", text: "1\n\n2\n", line: 2, fragment: "blank line"),
        ErrorCase(label: "a line of spaces", text: "1\n  \t\n2\n", line: 2, fragment: "blank line"),
        ErrorCase(label: "a blank line at the end", text: "1\n2\n\n", line: 3, fragment: "blank line"),
        ErrorCase(label: "the empty file", text: "", line: 0, fragment: "is empty; a trace holds one timestamp in milliseconds per line"),
        ErrorCase(label: "a period of 0", text: "0\n0\n", line: 2, fragment: "the trace ends at 0 ms; its last timestamp is its period"),
        ErrorCase(label: "beyond a day", text: "1\n86400001\n", line: 2, fragment: "'86400001' is beyond the longest trace, a day (86400000 ms)"),
        ErrorCase(label: "more digits than any integer", text: "99999999999999999999999999999\n", line: 1, fragment: "is beyond the longest trace"),
        ErrorCase(
            label: "too many in one millisecond", text: "1\n" + String(repeating: "5\n", count: 8_334), line: 8_335,
            fragment: "more than 8333 delivery opportunities at 5 ms; that is faster than the largest rate, 100Gbit"
        ),
        ErrorCase(
            label: "too many at 0 once the loop joins the period to it",
            text: String(repeating: "0\n", count: 5_000) + String(repeating: "7\n", count: 4_000), line: 9_000,
            fragment: "more than 8333 delivery opportunities at 7 ms, with the 5000 at 0 ms that the loop plays at the same moment"
        ),
    ])
    func errors(_ testCase: ErrorCase) throws {
        let error = try #require(traceError(testCase.text))
        #expect(error.file == "trace.txt")
        #expect(error.line == testCase.line)
        #expect(error.message.contains(testCase.fragment), "message: \(error.message)")
    }

    @Test("errors read file:line: message, or file: message for the whole file")
    func errorDescription() throws {
        let lines = (1...16).map(String.init) + ["x"]
        #expect(traceError(lines.joined(separator: "\n"))?.description
            == "trace.txt:17: 'x' is not a whole number; each line is the millisecond of one 1500-byte delivery opportunity, like 12")
        #expect(traceError("")?.description
            == "trace.txt: is empty; a trace holds one timestamp in milliseconds per line, one line per 1500-byte delivery opportunity")
    }

    @Test("a long bad line is quoted shortened")
    func longLine() throws {
        let error = try #require(traceError(String(repeating: "z", count: 5_000)))
        #expect(error.message.hasPrefix("'zzzzzzzzzzzzzzzzzzzz…' is not a whole number"))
    }

    @Test("at most two million lines")
    func lineBound() throws {
        // The rule at a smaller limit: two million timestamps take seconds of a debug build's
        // CPU, which the suite's timed tests beside it would miss.
        #expect(TraceTimestamps(file: "long.trace").maximumLines == 2_000_000)
        var collected = TraceTimestamps(file: "long.trace", maximumLines: 1_000)
        for line in 1...1_000 {
            try collected.append(line, line: line)
        }
        let error = try #require(throws: TraceError.self) { try collected.append(1_001, line: 1_001) }
        #expect(error.line == 1_001)
        #expect(error.message == "more than 1000 lines; a trace holds at most 1000 delivery opportunities")
        #expect(try trace(traceText(1...1_000)).opportunityCount == 1_000)
    }

    @Test("at most 32 MB, refused before a line is read")
    func byteBound() throws {
        let bytes = [UInt8](repeating: UInt8(ascii: " "), count: LinkTrace.maximumBytes + 1)
        let error = try #require(throws: TraceError.self) {
            _ = try bytes.withUnsafeBufferPointer { buffer throws(TraceError) in try LinkTrace.timestamps(in: buffer, file: "trace.txt") }
        }
        #expect(error.line == 0)
        #expect(error.message.hasPrefix("is 32000001 bytes; a trace file is at most 32000000 bytes (32 MB"))
    }
}

@Suite("LinkTrace files")
struct LinkTraceFileTests {
    @Test("a file is named by its stem and remembers its path")
    func nameAndFile() throws {
        try withTemporaryDirectory { root in
            try makeDirectory("t", in: root, files: ["Verizon-LTE-driving.down": "1\n2\n", "plain": "1\n"])
            let down = try LinkTrace(contentsOfFile: "\(root)/t/Verizon-LTE-driving.down")
            #expect(down.name == "Verizon-LTE-driving")
            #expect(down.file == "\(root)/t/Verizon-LTE-driving.down")
            #expect(try LinkTrace(contentsOfFile: "\(root)/t/plain").name == "plain")
        }
    }

    @Test("a missing file, a directory, a device and a FIFO are refused without reading them")
    func notRegularFiles() throws {
        try withTemporaryDirectory { root in
            let missing = try #require(throws: TraceError.self) { try LinkTrace(contentsOfFile: "\(root)/missing.trace") }
            #expect(missing.description == "\(root)/missing.trace: cannot read: No such file or directory")
            let directory = try #require(throws: TraceError.self) { try LinkTrace(contentsOfFile: root) }
            #expect(directory.message == "is not a regular file; a trace is a text file of timestamps")
            #expect(throws: TraceError.self) { try LinkTrace(contentsOfFile: "/dev/zero") }
            // Opening a FIFO for reading would block until a writer came.
            #expect(mkfifo("\(root)/fifo", 0o600) == 0)
            let fifo = try #require(throws: TraceError.self) { try LinkTrace(contentsOfFile: "\(root)/fifo") }
            #expect(fifo.message.hasPrefix("is not a regular file"))
        }
    }

    @Test("an oversized file is refused by its size")
    func oversizedFile() throws {
        try withTemporaryDirectory { root in
            let path = "\(root)/big.trace"
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.truncate(atOffset: UInt64(LinkTrace.maximumBytes) + 1)
            try handle.close()
            let error = try #require(throws: TraceError.self) { try LinkTrace(contentsOfFile: path) }
            #expect(error.line == 0)
            #expect(error.message.hasPrefix("is 32000001 bytes"))
        }
    }
}

@Suite("LinkTrace windows")
struct LinkTraceWindowTests {
    @Test("one opportunity every millisecond is 12 Mbit/s in every window")
    func constantRate() throws {
        let constant = try trace(traceText(1...1_000))
        #expect(constant.windowCapacities(widthMilliseconds: 100) == Array(repeating: .mbit(12), count: 10))
        #expect(constant.windowCapacities(widthMilliseconds: 1) == Array(repeating: .mbit(12), count: 1_000))
        #expect(constant.meanCapacity == .mbit(12))
        #expect(constant.peakCapacity == .mbit(12))
    }

    @Test("a step: 12 Mbit/s for 500 ms, then 2.4 Mbit/s")
    func step() throws {
        let fast = Array(0..<500)
        let slow = Array(stride(from: 500, to: 1_000, by: 5))
        // The opportunity at 0 is written as the period, as a trace's last line.
        let stepped = try trace(traceText(fast.dropFirst() + slow + [1_000]))
        #expect(stepped.windowCapacities(widthMilliseconds: 100) == Array(repeating: .mbit(12), count: 5) + Array(repeating: .kbit(2_400), count: 5))
        #expect(stepped.windowCapacities(widthMilliseconds: 1_000) == [.kbit(7_200)])
        #expect(stepped.meanCapacity == .kbit(7_200))
        #expect(stepped.peakCapacity == .mbit(12))
    }

    @Test("a ramp: each 100 ms window one opportunity more than the last")
    func ramp() throws {
        var timestamps: [Int] = []
        for window in 0..<10 {
            // Window w holds w + 1 opportunities, at its start.
            timestamps += Array(repeating: window * 100 + 1, count: window + 1)
        }
        timestamps.append(1_000)
        let ramp = try trace(traceText(timestamps))
        let opportunities = ramp.windows(widthMilliseconds: 100).map(\.opportunities)
        #expect(opportunities == [2, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        #expect(ramp.windowCapacities(widthMilliseconds: 100) == opportunities.map { .kbit(UInt64($0) * 120) })
        #expect(ramp.peakCapacity == .kbit(1_200))
        #expect(ramp.meanCapacity == .kbit(672))
    }

    @Test("an outage is windows of 0")
    func outage() throws {
        // 1 per ms for 300 ms, nothing for 400 ms, 1 per ms for 300 ms.
        let outage = try trace(traceText(Array(1..<300) + Array(700...1_000)))
        let capacities = outage.windowCapacities(widthMilliseconds: 100)
        #expect(capacities == [.mbit(12), .mbit(12), .mbit(12), .zero, .zero, .zero, .zero, .mbit(12), .mbit(12), .mbit(12)])
        #expect(outage.window(containing: 450, widthMilliseconds: 100).capacity == .zero)
        #expect(outage.meanCapacity == .kbit(7_200))
    }

    @Test("a period the width does not divide ends with a shorter window, then wraps to the first")
    func wrapAround() throws {
        // 250 ms: 1 per ms for 200 ms, then 2 per ms for 50 ms.
        let timestamps = Array(1..<200) + (200..<250).flatMap { [$0, $0] } + [250]
        let wrapped = try trace(traceText(timestamps))
        #expect(wrapped.periodMilliseconds == 250)
        #expect(wrapped.windowCount(widthMilliseconds: 100) == 3)
        #expect(wrapped.windows(widthMilliseconds: 100) == [
            TraceWindow(startMilliseconds: 0, lengthMilliseconds: 100, opportunities: 100, capacity: .mbit(12)),
            TraceWindow(startMilliseconds: 100, lengthMilliseconds: 100, opportunities: 100, capacity: .mbit(12)),
            TraceWindow(startMilliseconds: 200, lengthMilliseconds: 50, opportunities: 100, capacity: .mbit(24)),
        ])
        #expect(wrapped.window(at: 3, widthMilliseconds: 100) == wrapped.window(at: 0, widthMilliseconds: 100))
        #expect(wrapped.window(at: 5, widthMilliseconds: 100).startMilliseconds == 200)
        // 260 ms after the start the second loop is 10 ms in; 249 ms is the short window's end.
        #expect(wrapped.window(containing: 260, widthMilliseconds: 100).startMilliseconds == 0)
        #expect(wrapped.window(containing: 249, widthMilliseconds: 100).endMilliseconds == 250)
        #expect(wrapped.window(containing: 250, widthMilliseconds: 100).startMilliseconds == 0)
        // One window, as wide as the period, whatever the width asked for beyond it.
        #expect(wrapped.windows(widthMilliseconds: 250).map(\.capacity) == [wrapped.meanCapacity])
        #expect(wrapped.windows(widthMilliseconds: Int.max).map(\.lengthMilliseconds) == [250])
        #expect(wrapped.window(at: 7, widthMilliseconds: Int.max).capacity == wrapped.meanCapacity)
    }

    @Test("opportunities at the period and at 0 are one moment, counted in the first window")
    func periodJoinsZero() throws {
        let joined = try trace("0\n7\n10\n10\n")
        #expect(joined.windows(widthMilliseconds: 5).map(\.opportunities) == [3, 1])
        #expect(joined.window(at: 0, widthMilliseconds: 5).opportunities == 3)
        // 3 × 12 000 bits in 5 ms.
        #expect(joined.window(at: 0, widthMilliseconds: 5).capacity == .kbit(7_200))
    }

    @Test("one window at a time agrees with the list, for every width", arguments: [1, 7, 100, 333, 1_000, 4_999, 5_000, 20_000])
    func windowAtIndexAgreesWithList(width: Int) throws {
        for name in ["steps", "ramp", "outage"] {
            let shipped = try shippedTrace(name)
            let windows = shipped.windows(widthMilliseconds: width)
            #expect(windows.count == shipped.windowCount(widthMilliseconds: width))
            #expect(windows.reduce(0) { $0 + $1.opportunities } == shipped.opportunityCount)
            #expect(windows.last?.endMilliseconds == shipped.periodMilliseconds)
            for index in stride(from: 0, to: windows.count, by: max(1, windows.count / 50)) {
                #expect(shipped.window(at: index, widthMilliseconds: width) == windows[index])
                #expect(shipped.window(at: index + windows.count, widthMilliseconds: width) == windows[index])
            }
        }
    }

    @Test("the windows' capacities, weighted by their lengths, average to the mean")
    func weightedMean() throws {
        for name in ["steps", "ramp", "outage"] {
            let shipped = try shippedTrace(name)
            for width in [100, 333, 1_000] {
                let bitMilliseconds = shipped.windows(widthMilliseconds: width).reduce(0) { $0 + $1.capacity.bitsPerSecond * UInt64($1.lengthMilliseconds) }
                let mean = Double(bitMilliseconds) / Double(shipped.periodMilliseconds)
                #expect(abs(mean - Double(shipped.meanCapacity.bitsPerSecond)) < 1)
            }
        }
    }
}

@Suite("LinkTrace identity and summary")
struct LinkTraceIdentityTests {
    @Test("the fingerprint is FNV-1a over the timestamps, the same in every process")
    func fingerprint() throws {
        #expect(try trace("1\n").fingerprint == 0xad2a_ca77_4798_5764)
        #expect(try trace("1\n1\n2\n").fingerprint == 0xbe14_4c53_799c_ef27)
        #expect(try LinkTrace(parsing: " 1\r\n1\n2", name: "other", file: "other.txt").fingerprint == 0xbe14_4c53_799c_ef27)
    }

    @Test("traces are equal by name, file and timestamps; a set holds one of two equal ones")
    func equality() throws {
        #expect(try trace("1\n2\n") == trace("1\n2\n"))
        #expect(try trace("1\n2\n") != trace("1\n3\n"))
        #expect(try trace("1\n2\n") != LinkTrace(parsing: "1\n2\n", name: "trace", file: "elsewhere.txt"))
        #expect(Set([try trace("1\n2\n"), try trace("1\n2\n")]).count == 1)
    }

    @Test("the summary gives the mean and the 100 ms peak to three digits")
    func summary() throws {
        #expect(try trace(traceText(1...1_000)).summary == "trace trace (mean 12Mbit, peak 12Mbit)")
        // Four opportunities every 7 ms: 6 857 143 bit/s, in one window as the period is shorter
        // than 100 ms; in 1 ms windows, the three at 1 ms are 36 Mbit/s.
        let uneven = try LinkTrace(parsing: "1\n1\n1\n7\n", name: "uneven", file: "uneven.trace")
        #expect(uneven.meanCapacity == Bandwidth(bitsPerSecond: 6_857_143))
        #expect(uneven.summary == "trace uneven (mean 6.86Mbit, peak 6.86Mbit)")
        #expect(uneven.peakCapacity(widthMilliseconds: 1) == .mbit(36))
    }

    @Test("the shipped traces: steps, ramp and outage")
    func shippedTraces() throws {
        let steps = try shippedTrace("steps")
        #expect(steps.periodMilliseconds == 5_000)
        #expect(steps.windowCapacities(widthMilliseconds: 1_000) == [.kbit(4_800), .kbit(9_600), .kbit(7_200), .mbit(12), .mbit(6)])
        #expect(steps.summary == "trace steps (mean 7.92Mbit, peak 12Mbit)")

        let ramp = try shippedTrace("ramp")
        let up = (10...100).map { Bandwidth.kbit(UInt64($0) * 120) }
        let down = (11...99).reversed().map { Bandwidth.kbit(UInt64($0) * 120) }
        #expect(ramp.windowCapacities(widthMilliseconds: 100) == up + down)
        #expect(ramp.summary == "trace ramp (mean 6.6Mbit, peak 12Mbit)")

        let outage = try shippedTrace("outage")
        #expect(outage.windowCapacities(widthMilliseconds: 500) == Array(repeating: .mbit(6), count: 7) + Array(repeating: .zero, count: 6) + Array(repeating: .mbit(6), count: 7))
        #expect(outage.summary == "trace outage (mean 4.2Mbit, peak 6Mbit)")

        let walk = try shippedTrace("walk")
        let windows = walk.windowCapacities(widthMilliseconds: 100)
        #expect(walk.periodMilliseconds == 60_000)
        #expect(windows.count == 600)
        #expect(windows.indices.filter { windows[$0] == .zero } == Array(200..<215) + Array(450..<458))
        #expect(windows.allSatisfy { $0.bitsPerSecond % 120_000 == 0 && $0 <= .mbit(12) })

        for shipped in [steps, ramp, outage, walk] {
            let size = try FileManager.default.attributesOfItem(atPath: shipped.file)[.size] as? Int ?? .max
            #expect(size < 300_000, "\(shipped.file) is \(size) bytes")
        }
    }
}

extension Bandwidth {
    static let zero = Bandwidth(bitsPerSecond: 0)
}
