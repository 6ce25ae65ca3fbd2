#if canImport(Glibc)
import Glibc
#endif

/// Reading a trace file from disk.
///
/// A root daemon reads these files, so the reading is bounded before the parsing is: only a
/// regular file (not a FIFO that would block, nor `/dev/zero`, which never ends), and never
/// more than `maximumBytes`, however large it has grown since it was checked.
extension LinkTrace {
    /// Reads the trace at `path`, named by its file's stem; errors name `path`.
    public init(contentsOfFile path: String) throws(TraceError) {
        let bytes = try Self.contents(of: path)
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(TraceError) in try Self.timestamps(in: buffer, file: path) }
        }
        self.init(name: ProfileCatalog.stem(of: path), file: path, checkedTimestamps: try parsed.get())
    }

    /// The file's bytes: once beyond `maximumBytes` (a file that grew since `fstat`), no more are
    /// read, and the parser refuses them.
    private static func contents(of path: String) throws(TraceError) -> [UInt8] {
        func failure(_ message: String) -> TraceError { TraceError(file: path, line: 0, message: message) }
        func reason() -> String { String(cString: strerror(errno)) }

        // Non-blocking, so that opening a FIFO returns at once; the check below refuses it.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw failure("cannot read: \(reason())") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure("cannot read: \(reason())") }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw failure("is not a regular file; a trace is a text file of timestamps")
        }
        guard status.st_size <= maximumBytes else { throw failure(tooLarge(bytes: Int(status.st_size))) }

        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= maximumBytes {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw failure("cannot read: \(reason())") }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }
}
