import Foundation
import Testing

/// The shape of the sources, held: files small enough to read, a domain free of HTTP and of the
/// API's documents.
@Suite("The sources' structure", .serialized)
struct StructureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Each Swift file under `directory` (relative to the package) with its bytes.
    static func swiftFiles(under directory: String) -> [(path: String, bytes: Data)] {
        let base = root + "/" + directory
        let paths = (FileManager.default.subpaths(atPath: base) ?? []).filter { $0.hasSuffix(".swift") }
        return paths.compactMap { path in FileManager.default.contents(atPath: base + "/" + path).map { (path, $0) } }
    }

    @Test("No source file is over 500 lines")
    func shortFiles() {
        let files = Self.swiftFiles(under: "Sources")
        #expect(files.count > 100)
        let long = files.compactMap { file -> String? in
            let lines = file.bytes.count { $0 == UInt8(ascii: "\n") }
            return lines > 500 ? "\(file.path): \(lines)" : nil
        }
        #expect(long.isEmpty)
    }

    @Test("The domain (Conditions) imports neither HTTP nor the API's documents")
    func domainWithoutHTTP() {
        let files = Self.swiftFiles(under: "Sources/Conditions")
        #expect(files.count > 20)
        let forbidden = ["ControlAPI", "ControlHTTP", "NIOHTTP1", "LinkCondClient"].map { "import \($0)" }
        let offending = files.flatMap { file in
            String(decoding: file.bytes, as: UTF8.self).split(separator: "\n")
                .filter { line in forbidden.contains(line.trimmingCharacters(in: .whitespaces)) }
                .map { "\(file.path): \($0)" }
        }
        #expect(offending.isEmpty)
    }
}
