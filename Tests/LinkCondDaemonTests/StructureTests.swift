import Foundation
import Testing

/// The shape of the sources, held: files small enough to read, a domain free of HTTP and of the
/// API's documents.
@Suite("The sources' structure")
struct StructureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func swiftFiles(under directory: String) throws -> [URL] {
        let base = root.appendingPathComponent(directory)
        let found = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        return found.filter { $0.pathExtension == "swift" }
    }

    @Test("No source file is over 500 lines")
    func shortFiles() throws {
        let files = try Self.swiftFiles(under: "Sources")
        #expect(files.count > 100)
        let long = try files.compactMap { file -> String? in
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            return lines > 500 ? "\(file.lastPathComponent): \(lines)" : nil
        }
        #expect(long.isEmpty)
    }

    @Test("The domain (Conditions) imports neither HTTP nor the API's documents")
    func domainWithoutHTTP() throws {
        let files = try Self.swiftFiles(under: "Sources/Conditions")
        #expect(files.count > 20)
        let forbidden = ["import ControlAPI", "import ControlHTTP", "import NIOHTTP1", "import LinkCondClient"]
        let offending = try files.flatMap { file in
            try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .filter { line in forbidden.contains { line.trimmingCharacters(in: .whitespaces).hasPrefix($0) } }
                .map { "\(file.lastPathComponent): \($0)" }
        }
        #expect(offending.isEmpty)
    }
}
