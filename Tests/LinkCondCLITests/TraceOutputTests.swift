import ArgumentParser
import Foundation
import LinkCondVocabulary
@testable import linkcond
import NIOCore
import Pcapng
import Synchronization
import Testing

@Suite("capture: where the trace is written, in one file or a ring of them")
struct TraceOutputTests {
    static let writer = PcapngWriter()
    static let header = writer.sectionHeader(application: "linkcondd", system: nil, comment: nil)
        + writer.interface(.ethernet, snapLength: 262_144, name: "eth0", description: nil)
        + writer.interface(.notes, snapLength: 65_535, name: "linkcond", description: nil)

    static func packet(_ number: Int) -> [UInt8] {
        writer.packet(interface: 0, nanoseconds: UInt64(number) * 1_000_000, data: [UInt8](repeating: UInt8(number % 256), count: 200), length: 200, direction: .outbound)
    }

    static func note(_ text: String, at number: Int) -> [UInt8] {
        writer.packet(interface: 1, nanoseconds: UInt64(number) * 1_000_000, data: Array(text.utf8), length: UInt32(text.utf8.count), comment: text)
    }

    /// A scratch directory removed after `body`.
    static func inDirectory(_ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trace-output-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(directory)
    }

    /// `bytes` handed over in pieces of `piece`, as a stream does, cut anywhere.
    static func feed(_ output: TraceOutput, _ bytes: [UInt8], piece: Int = 97) throws {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            try output.write(ByteBuffer(bytes: bytes[offset..<end]))
            offset = end
        }
    }

    static func read(_ path: String) throws -> PcapngReader {
        try PcapngReader([UInt8](FileManager.default.contents(atPath: path) ?? Data()))
    }

    @Test("File names of a trace in parts keep the extension and sort", arguments: [
        ("out.pcapng", 1, "out-00001.pcapng"),
        ("/tmp/a.b/trace", 12, "/tmp/a.b/trace-00012"),
        ("dir/run.2.pcapng", 123_456, "dir/run.2-123456.pcapng"),
        (".pcapng", 3, ".pcapng-00003"),
    ])
    func partNames(path: String, number: Int, expected: String) {
        #expect(TraceFileLimits.partName(path, number: number) == expected)
    }

    @Test("A ring keeps the newest files, each a whole trace that begins with the condition in force")
    func ring() throws {
        try Self.inDirectory { directory in
            let path = "\(directory)/trace.pcapng"
            let output = TraceOutput(path: path, limits: TraceFileLimits(fileSize: 4_000, files: 3))
            var stream = Self.header + Self.note("Slow Net (in force as the capture began)", at: 0)
            for number in 1...100 {
                stream += Self.packet(number)
                if number == 50 { stream += Self.note("Nasty Net (activate)", at: number) }
            }
            try Self.feed(output, stream)
            try output.finish()
            output.close()

            let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            #expect(names.count == 3)
            #expect(output.files.map { ($0 as NSString).lastPathComponent } == names)
            var packets: [UInt64] = []
            for name in names {
                let path = "\(directory)/\(name)"
                let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
                #expect(size <= 4_000, "\(name) is \(size) bytes")
                let trace = try Self.read(path)
                #expect(trace.interfaces.map(\.name) == ["eth0", "linkcond"])
                let first = try #require(trace.packets.first)
                #expect(first.interface == 1, "\(name) begins with a note")
                #expect(String(decoding: first.data, as: UTF8.self) == "Nasty Net (activate)")
                packets += trace.packets.filter { $0.interface == 0 }.map { $0.nanoseconds / 1_000_000 }
            }
            // The newest files hold the last packets, in order, none twice and none missing.
            #expect(packets == Array(packets.first!...100))
        }
    }

    @Test("Without --files every part stays; the first part begins with the trace's own first note")
    func parts() throws {
        try Self.inDirectory { directory in
            let path = "\(directory)/trace"
            let output = TraceOutput(path: path, limits: TraceFileLimits(fileSize: 10_000))
            var stream = Self.header + Self.note("Slow Net (in force as the capture began)", at: 0)
            for number in 1...200 { stream += Self.packet(number) }
            try Self.feed(output, stream, piece: 4_096)
            output.close()
            let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            #expect(names.first == "trace-00001")
            var total = 0
            for name in names {
                let path = "\(directory)/\(name)"
                let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
                #expect(size <= 10_000, "\(name) is \(size) bytes")
                total += try Self.read(path).packets.filter { $0.interface == 0 }.count
            }
            #expect(total == 200)
            #expect(names.count > (200 * Self.packet(1).count) / 10_000, "each part holds at most 10 000 bytes")
        }
    }

    @Test("--max-size stops the capture once, and nothing past the limit is written")
    func totalLimit() throws {
        try Self.inDirectory { directory in
            let path = "\(directory)/trace.pcapng"
            let calls = Mutex(0)
            let output = TraceOutput(path: path, limits: TraceFileLimits(totalSize: 5_000)) { calls.withLock { $0 += 1 } }
            var stream = Self.header
            for number in 1...60 { stream += Self.packet(number) }
            stream += Self.writer.statistics(interface: 0, at: 61_000_000, CaptureCounts(startNanoseconds: 0, received: 60, written: 60), comment: "asked to stop")
            try Self.feed(output, stream)
            output.close()
            #expect(calls.withLock { $0 } == 1)
            let trace = try Self.read(path)
            #expect(trace.statistics.count == 1, "the statistics still close the trace")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let statisticsSize = Self.writer.statistics(interface: 0, at: 0, CaptureCounts(startNanoseconds: 0, received: 60, written: 60), comment: "asked to stop").count
            #expect(size - statisticsSize <= 5_000)
            #expect(trace.packets.count == (5_000 - Self.header.count) / Self.packet(1).count)
        }
    }

    @Test("Bad sizes and combinations are refused before anything is asked of the daemon", arguments: [
        ["-w", "-", "--file-size", "10MB"],
        ["-w", "a.pcapng", "--files", "3"],
        ["-w", "a.pcapng", "--file-size", "10MB", "--files", "0"],
        ["-w", "a.pcapng", "--file-size", "10mb"],
        ["-w", "a.pcapng", "--file-size", "1KB"],
        ["-w", "a.pcapng", "--max-size", "ten"],
        ["-w", "a.pcapng", "--max-size", "99999999999999999999999GB"],
    ])
    func refused(arguments: [String]) {
        #expect(throws: (any Error).self) { try Capture.parse(arguments) }
    }

    @Test("Byte sizes read exactly, in decimal and binary units")
    func byteSizes() throws {
        let range: ClosedRange<UInt64> = 1...UInt64.max
        #expect(try ByteSize(parsing: "1.5MB", range: range).bytes == 1_500_000)
        #expect(try ByteSize(parsing: "512 KiB", range: range).bytes == 524_288)
        #expect(try ByteSize(parsing: "2GB", range: range).description == "2GB")
        #expect(try ByteSize(parsing: "1500000B", range: range).description == "1.5MB")
        #expect(throws: ByteSizeError.self) { try ByteSize(parsing: "1.0000001KB", range: range) }
        #expect(throws: ByteSizeError.self) { try ByteSize(parsing: "1.2.3MB", range: range) }
        #expect(throws: ByteSizeError.self) { try ByteSize(parsing: "-1MB", range: range) }
        #expect(throws: ByteSizeError.self) { try ByteSize(parsing: "20000000000GB", range: range) }
    }
}
