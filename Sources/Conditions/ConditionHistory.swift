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

    init(file: URL?) {
        self.file = file
        guard let file, let text = try? String(contentsOf: file, encoding: .utf8) else { return }
        let lines = text.split(separator: "\n")
        let decoder = JSONDecoder()
        entries = lines.suffix(Self.kept).compactMap { try? decoder.decode(HistoryRecord.self, from: Data($0.utf8)) }
        linesInFile = lines.count
        trimFileIfLong()
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
        let descriptor = open(file.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
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
