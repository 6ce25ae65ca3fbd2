import Foundation
import Profiles
import Testing

/// The error `body` throws, or `nil` when it succeeds.
func unitError<Value>(_ body: () throws(UnitParseError) -> Value) -> UnitParseError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// The error `ProfileParser` reports for `yaml`, or `nil` when the text parses.
func parseError(_ yaml: String, file: String = "test.yaml") -> ProfileError? {
    do {
        _ = try ProfileParser.parse(yaml: yaml, file: file)
        return nil
    } catch {
        return error
    }
}

/// A fresh, uniquely named directory under the system temporary directory; removed when `body` returns.
func withTemporaryDirectory<Result>(_ body: (String) throws -> Result) throws -> Result {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("linkcond-profiles-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

/// Creates `parent/name` holding `files` (file name -> contents) and returns its path.
@discardableResult
func makeDirectory(_ name: String, in parent: String, files: [String: String]) throws -> String {
    let directory = (parent as NSString).appendingPathComponent(name)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for (fileName, contents) in files {
        try Data(contents.utf8).write(to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(fileName)))
    }
    return directory
}

/// Loads a catalog from a temporary directory holding `files`; the directory is gone afterwards.
func loadCatalog(files: [String: String]) throws -> ProfileCatalog {
    try withTemporaryDirectory { root in
        let directory = try makeDirectory("profiles", in: root, files: files)
        return ProfileCatalog.load(from: [directory])
    }
}

/// A minimal valid profile file.
func profileYAML(name: String, downlink: String = "{ bandwidth: 1Mbit }") -> String {
    "name: \(name)\ndownlink: \(downlink)\n"
}
