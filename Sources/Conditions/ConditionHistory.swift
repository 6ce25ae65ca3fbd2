#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// The last changes of condition with who, when and why, kept in memory and appended to a
/// JSON-lines file so that "why were my tests slow last night?" has an answer after restarts.
package struct ConditionHistory {
    package static let kept = 200
    /// The file is cut back to `kept` lines when it grows past this.
    static let fileLimit = 2000

    private(set) var entries: [HistoryRecord] = []
    let file: URL?
    /// Lines in the file, so that a daemon that runs for months keeps it bounded too.
    private var linesInFile = 0

    /// The most of the file read at start, from its end: `fileLimit` lines of the daemon's own
    /// many times over. A longer file (damaged, or written by something else) is read from that
    /// far before its end, and cut back at once.
    static let readLimit = 4 << 20

    init(file: URL?) {
        self.file = file
        guard let file, let (tail, whole) = Self.readTail(of: file.path, limit: Self.readLimit) else { return }
        let parsed = Self.parse(tail, fromMiddle: !whole)
        entries = parsed.records
        linesInFile = whole ? parsed.lines : Self.fileLimit + 1
        trimFileIfLong()
    }

    /// The records of a history file's bytes: of its last `kept` lines, each that decodes (a
    /// damaged line is skipped, the rest kept); with the number of lines. `fromMiddle`: the
    /// bytes begin inside a line, which is left out.
    package static func parse(_ bytes: [UInt8], fromMiddle: Bool) -> (records: [HistoryRecord], lines: Int) {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        if fromMiddle, !lines.isEmpty, bytes.first != UInt8(ascii: "\n") {
            lines.removeFirst()
        }
        let decoder = JSONDecoder()
        let records = lines.suffix(kept).compactMap { try? decoder.decode(HistoryRecord.self, from: Data($0)) }
        return (records, lines.count)
    }

    /// The last `limit` bytes of the regular file at `path`, and whether that is all of it;
    /// `nil` when it cannot be read or is not a regular file (a FIFO would block the start).
    private static func readTail(of path: String, limit: Int) -> (bytes: [UInt8], whole: Bool)? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(status.st_size)
        let start = max(0, size - limit)
        guard lseek(descriptor, off_t(start), SEEK_SET) == off_t(start) else { return nil }
        var bytes = [UInt8](repeating: 0, count: size - start)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            guard count > 0 else { break }
            filled += count
        }
        bytes.removeLast(bytes.count - filled)
        return (bytes, start == 0)
    }

    mutating func record(_ entry: HistoryRecord) {
        entries.append(entry)
        if entries.count > Self.kept {
            entries.removeFirst(entries.count - Self.kept)
        }
        append(entry)
        linesInFile += 1
        trimFileIfLong()
    }

    func recent(_ limit: Int) -> [HistoryRecord] {
        Array(entries.suffix(max(0, limit)))
    }

    private func append(_ entry: HistoryRecord) {
        guard let file, var line = try? JSONEncoder().encode(entry) else { return }
        line.append(UInt8(ascii: "\n"))
        try? FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(file.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    private mutating func trimFileIfLong() {
        guard let file, linesInFile > Self.fileLimit else { return }
        let encoder = JSONEncoder()
        let text = entries.compactMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) + "\n" }.joined()
        try? Data(text.utf8).write(to: file, options: .atomic)
        linesInFile = entries.count
    }
}
