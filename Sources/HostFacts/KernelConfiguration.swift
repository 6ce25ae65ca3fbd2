import CZlib
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The running kernel's build configuration: whether a feature is built in (`y`), a module
/// (`m`) or absent. Read from `/proc/config.gz` (kernels built with IKCONFIG_PROC) or
/// `/boot/config-RELEASE` (Debian, Ubuntu); `nil` when neither exists.
public struct KernelConfiguration: Sendable {
    public enum Setting: Sendable, Equatable {
        case builtIn, module, absent
    }

    private var settings: [String: Setting]

    public init(text: String) {
        var settings: [String: Setting] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# CONFIG_"), line.hasSuffix(" is not set") {
                settings[String(line.dropFirst(2).dropLast(" is not set".count))] = .absent
            } else if line.hasPrefix("CONFIG_"), let equals = line.firstIndex(of: "=") {
                let value = line[line.index(after: equals)...]
                settings[String(line[..<equals])] = value == "y" ? .builtIn : value == "m" ? .module : nil
            }
        }
        self.settings = settings
    }

    /// `CONFIG_NAME`'s setting; a symbol the file does not mention is absent.
    public func setting(_ name: String) -> Setting {
        settings["CONFIG_" + name] ?? .absent
    }

    public static func running(release: String, root: String = "") -> KernelConfiguration? {
        if let text = readGzip(root + "/proc/config.gz") ?? (try? String(contentsOfFile: root + "/boot/config-\(release)", encoding: .utf8)) {
            return KernelConfiguration(text: text)
        }
        return nil
    }

    /// A gzip file's contents as text (zlib reads a plain file as it is, too).
    static func readGzip(_ path: String) -> String? {
        guard let file = gzopen(path, "rb") else { return nil }
        defer { gzclose(file) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = gzread(file, &buffer, UInt32(buffer.count))
            guard got > 0 else { return got == 0 ? String(decoding: data, as: UTF8.self) : nil }
            data += buffer[..<Int(got)]
            guard data.count < 8 << 20 else { return nil }
        }
    }
}
