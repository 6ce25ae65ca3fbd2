import Glibc
import LinkCondVocabulary
import NIOCore
import Pcapng

/// How much of a trace is kept on disk: a new file once the current one would pass
/// `fileSize` (each file a whole trace: its own section and interfaces, and the condition in
/// force repeated as its first note), at most `files` of them (the oldest removed: a ring), and
/// no more than `totalSize` in all (the capture then stops).
struct TraceFileLimits: Sendable, Equatable {
    var fileSize: UInt64?
    var files: Int?
    var totalSize: UInt64?

    static let none = TraceFileLimits()

    /// The name of the `number`th file of a trace written to `path` in parts: `out.pcapng`
    /// becomes `out-00001.pcapng`, `out-00002.pcapng`, … (five digits, so that they sort).
    static func partName(_ path: String, number: Int) -> String {
        let digits = String(number)
        let padded = String(repeating: "0", count: max(0, 5 - digits.count)) + digits
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        if let dot = path[slash...].lastIndex(of: "."), dot > slash {
            return "\(path[..<dot])-\(padded)\(path[dot...])"
        }
        return "\(path)-\(padded)"
    }
}

/// Where a trace goes: a file the client opens (as the user who runs it), a ring of them, or
/// stdout. Blocks are written whole: bytes are held until the block they belong to has
/// arrived, so that an interrupted capture leaves files that end where a block does.
final class TraceOutput: @unchecked Sendable {
    struct WriteError: Error, CustomStringConvertible {
        var code: Int32
        var path: String?
        /// The reader of a pipe went away.
        var reader: Bool { code == EPIPE }
        var description: String {
            let reason = String(cString: strerror(code))
            return path.map { "\($0): \(reason)" } ?? reason
        }
    }

    private let path: String
    private let limits: TraceFileLimits
    /// Called once, when the next packet would pass `limits.totalSize`.
    private let reachedLimit: @Sendable () -> Void
    /// Opened with the first bytes: a refused capture leaves no file behind.
    private var descriptor: Int32 = -1
    private var pending: [UInt8] = []
    /// A block larger than this is not one linkcondd writes.
    static let largestBlock = 1 << 20

    /// The section header and interface blocks, which begin every file of a ring.
    private var header: [UInt8] = []
    private var notesInterface: UInt32?
    /// The last note on the condition, which begins every file after the first.
    private var lastNote: [UInt8]?
    private var fileBytes: UInt64 = 0
    private var filePackets = 0
    private var totalBytes: UInt64 = 0
    /// Whether packets were left out at `limits.totalSize`.
    private(set) var limitReached = false
    /// The files written, oldest first; those a ring removed are gone from here too.
    private(set) var files: [String] = []
    /// How many files the ring removed.
    private(set) var removedFiles = 0
    private var partNumber = 0

    init(path: String, limits: TraceFileLimits = .none, reachedLimit: @escaping @Sendable () -> Void = {}) {
        self.path = path
        self.limits = limits
        self.reachedLimit = reachedLimit
        if path == "-" {
            descriptor = STDOUT_FILENO
            signal(SIGPIPE, SIG_IGN)
        }
    }

    private var owned: Bool { path != "-" }
    private var inParts: Bool { owned && limits.fileSize != nil }

    /// Whether any block has been written.
    private(set) var hasBegun = false

    func write(_ chunk: ByteBuffer) throws {
        pending += chunk.readableBytesView
        var whole = 0
        var batch: [UInt8] = []
        while pending.count - whole >= 8 {
            let length = Int(ByteOrder.little.u32(pending[...], whole + 4))
            guard length >= 12, length <= Self.largestBlock else { throw WriteError(code: EBADMSG) }
            guard pending.count - whole >= length else { break }
            try place(pending[whole..<(whole + length)], batch: &batch)
            whole += length
        }
        guard whole > 0 else { return }
        try flush(&batch)
        pending.removeFirst(whole)
    }

    /// Adds one whole block to `batch`, starting a new file first when the block would pass
    /// the file's size, or leaves it out when it would pass the total.
    private func place(_ block: ArraySlice<UInt8>, batch: inout [UInt8]) throws {
        let type = ByteOrder.little.u32(block, block.startIndex)
        let isHeader = type == PcapngFormat.sectionHeader || type == PcapngFormat.interfaceDescription
        let isPacket = type == PcapngFormat.enhancedPacket
        if isHeader {
            if type == PcapngFormat.sectionHeader { header = [] }
            header += block
            notesInterface = Self.notesInterface(in: header)
        }
        let isNote = isPacket && notesInterface != nil && ByteOrder.little.u32(block, block.startIndex + 8) == notesInterface
        if isPacket, let total = limits.totalSize, totalBytes + UInt64(block.count) > total {
            if !limitReached {
                limitReached = true
                reachedLimit()
            }
            return
        }
        if isPacket, inParts, let fileSize = limits.fileSize, filePackets > 0, fileBytes + UInt64(block.count) > fileSize {
            try flush(&batch)
            try startNextFile()
            batch += header
            if !isNote, let lastNote { batch += lastNote }
            count(header.count + (isNote ? 0 : lastNote?.count ?? 0), packets: 0)
        }
        if isNote { lastNote = Array(block) }
        batch += block
        count(block.count, packets: isPacket ? 1 : 0)
    }

    private func count(_ bytes: Int, packets: Int) {
        fileBytes += UInt64(bytes)
        totalBytes += UInt64(bytes)
        filePackets += packets
    }

    private func flush(_ batch: inout [UInt8]) throws {
        guard !batch.isEmpty else { return }
        try writeAll(batch[...], to: try opened())
        hasBegun = true
        batch.removeAll(keepingCapacity: true)
    }

    private func opened() throws -> Int32 {
        if descriptor < 0 {
            partNumber += 1
            let name = inParts ? TraceFileLimits.partName(path, number: partNumber) : path
            descriptor = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw WriteError(code: errno, path: name) }
            files.append(name)
            if let keep = limits.files, files.count > keep {
                for old in files.prefix(files.count - keep) { unlink(old) }
                removedFiles += files.count - keep
                files.removeFirst(files.count - keep)
            }
        }
        return descriptor
    }

    private func startNextFile() throws {
        try finish()
        close()
        descriptor = -1
        fileBytes = 0
        filePackets = 0
    }

    /// Anything left is a block the daemon never finished: dropped, so the file stays whole.
    func finish() throws {
        if owned, descriptor >= 0, fsync(descriptor) != 0, errno != EINVAL { throw WriteError(code: errno, path: files.last) }
    }

    /// Where the trace went, for the user, when that is more than the one file they named.
    var closingLines: [String] {
        var lines: [String] = []
        if inParts, let first = files.first, let last = files.last {
            let kept = files.count == 1 ? "1 file, \(first)" : "\(files.count) files, \(first) to \(last)"
            lines.append("the trace is in \(kept)" + (removedFiles > 0 ? " (the \(removedFiles) older removed: --files \(limits.files ?? 0))" : ""))
        }
        if limitReached, let total = limits.totalSize {
            lines.append("the capture stopped at --max-size \(ByteSize(bytes: total))")
        }
        return lines
    }

    func close() {
        if owned, descriptor >= 0 { Glibc.close(descriptor) }
    }

    private func writeAll(_ bytes: ArraySlice<UInt8>, to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw WriteError(code: errno, path: owned ? files.last : nil)
                }
                offset += written
            }
        }
    }

    /// The index of the interface that carries linkcond's notes, read from the header blocks.
    private static func notesInterface(in header: [UInt8]) -> UInt32? {
        guard let reader = try? PcapngReader(header, allowingTruncatedEnd: true) else { return nil }
        return reader.interfaces.firstIndex { $0.link == LinkType.notes.rawValue }.map { UInt32($0) }
    }
}
