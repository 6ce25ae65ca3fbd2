#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which resolver a sandbox can reach. A host whose /etc/resolv.conf names only a resolver on
/// its own loopback (systemd-resolved's 127.0.0.53, a local dnsmasq) has none the sandbox can
/// reach: its loopback is its own. Then the sandbox gets the upstream servers that resolver
/// uses, as Docker does.
enum SandboxDNS {
    static let hostFile = "/etc/resolv.conf"
    static let upstreamFiles = ["/run/systemd/resolve/resolv.conf"]

    /// A file to bind over the sandbox's /etc/resolv.conf, or `nil` when the host's works.
    static func resolvConfReplacement() -> String? {
        guard let host = try? String(contentsOfFile: hostFile, encoding: .utf8), onlyLoopback(host) else { return nil }
        return upstreamFiles.first { file in
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return false }
            return !nameservers(in: text).isEmpty && !onlyLoopback(text)
        }
    }

    /// Whether every `nameserver` line names a loopback address (and there is at least one).
    static func onlyLoopback(_ resolvConf: String) -> Bool {
        let servers = nameservers(in: resolvConf)
        return !servers.isEmpty && servers.allSatisfy { $0.hasPrefix("127.") || $0 == "::1" }
    }

    static func nameservers(in resolvConf: String) -> [String] {
        resolvConf.split(separator: "\n").compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0] == "nameserver" else { return nil }
            return String(fields[1])
        }
    }
}
