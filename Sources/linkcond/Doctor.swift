import ArgumentParser
import ControlAPI
import LinkCondClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import HostFacts

/// `linkcond doctor`: what a first run needs, checked on this machine, with how to fix each.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what linkcond needs on this machine, and say how to fix what is missing.",
        discussion: "Exits 0 when nothing failed (warnings are worth reading but do not fail)."
    )

    @OptionGroup var connection: ConnectionOptions
    @Option(help: "The group linkcondd lets change the condition (its --group).") var group = "linkcond"
    @Flag(help: "Print the findings as JSON.") var json = false

    func run() async throws {
        var findings = KernelModules.findings()
        findings.append(KernelModules.socketDestroyFinding())
        findings += await DaemonReachability.findings(client: connection.client)
        findings.append(GroupMembership.finding(group: group))
        findings += NetworkFacts.findings()
        if json {
            try printJSON(findings)
        } else {
            print(findings.map(\.text).joined(separator: "\n"))
        }
        if findings.contains(where: { $0.level == .fail }) {
            throw ExitCode.failure
        }
    }
}

/// One thing `doctor` looked at.
struct Finding: Codable, Equatable {
    enum Level: String, Codable { case ok, warn, fail }

    var level: Level
    var topic: String
    var message: String
    var fix: String?

    var text: String {
        let label = level == .fail ? "FAIL" : level.rawValue
        var text = label.padding(6) + "\(topic): \(message)"
        if let fix { text += "\n      fix: \(fix)" }
        return text
    }
}

/// The kernel's traffic-control parts linkcond uses, and whether this kernel has them.
enum KernelModules {
    /// Module, kernel configuration symbol, and what linkcond uses it for.
    static let needed = [
        ("sch_netem", "NET_SCH_NETEM", "delay, jitter and loss"), ("sch_htb", "NET_SCH_HTB", "bandwidth"),
        ("sch_ingress", "NET_SCH_INGRESS", "the downlink"), ("ifb", "IFB", "the downlink"),
        ("cls_u32", "NET_CLS_U32", "the downlink"), ("cls_flower", "NET_CLS_FLOWER", "classifying packets"),
        ("act_mirred", "NET_ACT_MIRRED", "the downlink"),
    ]

    static func findings(release: String = kernelRelease(), root: String = "") -> [Finding] {
        let modules = "\(root)/lib/modules/\(release)"
        let builtIn = (try? String(contentsOfFile: modules + "/modules.builtin", encoding: .utf8)) ?? ""
        let loadable = (try? String(contentsOfFile: modules + "/modules.dep", encoding: .utf8)) ?? ""
        let configuration = KernelConfiguration.running(release: release, root: root)
        let disabled = ((try? String(contentsOfFile: root + "/proc/sys/kernel/modules_disabled", encoding: .utf8)) ?? "0").hasPrefix("1")
        let ubuntu = ((try? String(contentsOfFile: root + "/etc/os-release", encoding: .utf8)) ?? "").contains("ID=ubuntu")
        return needed.map { name, symbol, purpose in
            let topic = "kernel \(name)"
            if FileManager.default.fileExists(atPath: "\(root)/sys/module/\(name)") {
                return Finding(level: .ok, topic: topic, message: "loaded")
            }
            let setting = configuration?.setting(symbol)
            if setting == .builtIn || contains(builtIn, module: name) {
                return Finding(level: .ok, topic: topic, message: "built into the kernel")
            }
            if contains(loadable, module: name) {
                guard !disabled else {
                    return Finding(level: .fail, topic: topic, message: "not loaded, and loading modules is disabled (kernel.modules_disabled=1)",
                                   fix: "load it at boot: echo \(name) | sudo tee /etc/modules-load.d/linkcond.conf, then reboot")
                }
                return Finding(level: .ok, topic: topic, message: "not loaded yet; the kernel loads it on first use")
            }
            let fix = ubuntu && name == "sch_netem"
                ? "on Ubuntu's cloud kernels netem is in linux-modules-extra: sudo apt install linux-modules-extra-\(release)"
                : ubuntu ? "sudo apt install linux-modules-extra-\(release)"
                : "use a kernel built with it (every distribution's generic kernel has it as a module; on Debian: sudo apt install linux-image-amd64, then reboot into it)"
            if setting == .module {
                return Finding(level: .fail, topic: topic, message: "built as a module, but kernel \(release) has no modules installed in \(modules)",
                               fix: "install the modules of the running kernel (Debian: linux-image-\(release); Ubuntu: linux-modules-\(release) and linux-modules-extra-\(release))")
            }
            let why = setting == .absent ? "kernel \(release) was built without it (CONFIG_\(symbol) is not set)"
                : loadable.isEmpty ? "no module list in \(modules) and no kernel configuration to read" : "no such module for kernel \(release)"
            return Finding(level: .fail, topic: topic, message: "missing (\(why)); linkcond needs it for \(purpose)", fix: fix)
        }
    }

    /// Whether `linkcond reset` can work here: the kernel must be able to destroy sockets.
    static func socketDestroyFinding(release: String = kernelRelease(), root: String = "") -> Finding {
        let topic = "kernel socket destroy"
        switch KernelConfiguration.running(release: release, root: root)?.setting("INET_DIAG_DESTROY") {
        case .builtIn:
            return Finding(level: .ok, topic: topic, message: "built in (linkcond reset)")
        case .absent:
            return Finding(level: .warn, topic: topic, message: "kernel \(release) was built without it (CONFIG_INET_DIAG_DESTROY is not set): linkcond reset is refused",
                           fix: "use a distribution's generic kernel (Debian's, Ubuntu's and Fedora's have it)")
        default:
            return Finding(level: .warn, topic: topic, message: "no kernel configuration to read: linkcond reset says whether it works when asked")
        }
    }

    /// Whether a modules.builtin or modules.dep text lists `module` (any compression).
    static func contains(_ list: String, module: String) -> Bool {
        list.split(separator: "\n").contains { line in
            let path = line.split(separator: ":", maxSplits: 1).first ?? ""
            guard let file = path.split(separator: "/").last else { return false }
            return file == "\(module).ko" || file.hasPrefix("\(module).ko.")
        }
    }

    static func kernelRelease() -> String {
        var names = utsname()
        uname(&names)
        return withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// The control socket, and the daemon behind it.
enum DaemonReachability {
    static func findings(client: ControlClient) async -> [Finding] {
        let path = client.socketPath
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            return [Finding(
                level: .fail, topic: "daemon", message: "no control socket at \(path): linkcondd is not running"
                    + (FileManager.default.fileExists(atPath: directory) ? "" : " (and \(directory) does not exist)"),
                fix: "sudo systemctl start linkcondd.socket (installed), or sudo linkcondd in a terminal; a daemon elsewhere: --socket PATH"
            )]
        }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK:
            break
        case S_IFDIR:
            return [Finding(level: .fail, topic: "daemon", message: "\(path) is a directory, not linkcondd's socket",
                            fix: "remove it (sudo rmdir \(path)) and restart linkcondd: sudo systemctl restart linkcondd.socket")]
        default:
            return [Finding(level: .fail, topic: "daemon", message: "\(path) is a regular file, not a socket: something wrote to it",
                            fix: "remove it (sudo rm \(path)) and restart linkcondd: sudo systemctl restart linkcondd.socket")]
        }
        do {
            let status = try await client.status()
            let condition = status.profile.map { "'\($0.name)'" } ?? "off"
            return [Finding(level: .ok, topic: "daemon", message: "linkcondd answers on \(path): shaping \(status.interface), condition \(condition)")]
        } catch let error where error.code == .permissionDenied {
            return [Finding(level: .fail, topic: "daemon", message: "not allowed to connect to \(path)",
                            fix: "the socket should be mode 0666 in a directory everyone may enter: sudo systemctl restart linkcondd.socket")]
        } catch {
            return [Finding(level: .fail, topic: "daemon", message: "a stale socket: nothing answers on \(path) (a daemon that died?)",
                            fix: "sudo systemctl restart linkcondd.socket linkcondd, or remove \(path) and start sudo linkcondd")]
        }
    }
}

/// Whether this user may change the condition.
enum GroupMembership {
    static func finding(group name: String) -> Finding {
        let topic = "permission"
        if getuid() == 0 {
            return Finding(level: .ok, topic: topic, message: "root: may change the condition")
        }
        guard let group = getgrnam(name) else {
            return Finding(level: .warn, topic: topic, message: "group '\(name)' does not exist: only root may change the condition; reading works for everyone",
                           fix: "sudo systemd-sysusers (installed units), or sudo groupadd \(name); then sudo usermod -aG \(name) $USER and log in again")
        }
        let groupID = group.pointee.gr_gid
        var groups = [gid_t](repeating: 0, count: Int(getgroups(0, nil)))
        let count = getgroups(Int32(groups.count), &groups)
        if getgid() == groupID || groups.prefix(Int(max(count, 0))).contains(groupID) {
            return Finding(level: .ok, topic: topic, message: "you are in group '\(name)': you may change the condition without sudo")
        }
        let user = getpwuid(getuid()).flatMap { $0.pointee.pw_name }.map { String(cString: $0) } ?? "\(getuid())"
        var members: [String] = []
        var member = group.pointee.gr_mem
        while let pointer = member?.pointee {
            members.append(String(cString: pointer))
            member = member?.advanced(by: 1)
        }
        if members.contains(user) {
            return Finding(level: .warn, topic: topic, message: "\(user) was added to group '\(name)', but this session started before that",
                           fix: "log in again (or run 'newgrp \(name)'); until then use sudo")
        }
        return Finding(level: .warn, topic: topic, message: "\(user) is not in group '\(name)': changing the condition needs sudo",
                       fix: "sudo usermod -aG \(name) \(user), then log in again")
    }
}

/// What a first try needs to know about this machine's network.
enum NetworkFacts {
    static func findings(resolvConf: String = "/etc/resolv.conf") -> [Finding] {
        var findings: [Finding] = []
        if let interface = DefaultRoute.interface() {
            findings.append(Finding(
                level: .ok, topic: "network",
                message: "default route via \(interface): linkcondd shapes it unless started with --interface; the machine's own connections on it (a CI agent's too) are shaped, all but tcp/22 and --exempt-port/--exempt-cidr"
            ))
        } else {
            findings.append(Finding(level: .warn, topic: "network", message: "no default route: start linkcondd with --interface IF"))
        }
        let text = (try? String(contentsOfFile: resolvConf, encoding: .utf8)) ?? ""
        let servers = text.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(whereSeparator: \.isWhitespace)
            return words.count >= 2 && words[0] == "nameserver" ? String(words[1]) : nil
        }
        if let local = servers.first(where: { $0.hasPrefix("127.") || $0 == "::1" }) {
            let cache = local == "127.0.0.53" ? "systemd-resolved" : "a local cache"
            findings.append(Finding(
                level: .warn, topic: "dns",
                message: "DNS goes to \(local) (\(cache)): what it has cached comes back at once, unshaped; the DNS delay only shows on queries that leave the machine",
                fix: "to see every lookup delayed, query a server beyond the link (e.g. dig @9.9.9.9) or flush the cache (resolvectl flush-caches) before a test"
            ))
        } else if !servers.isEmpty {
            findings.append(Finding(level: .ok, topic: "dns", message: "DNS queries go to \(servers.joined(separator: ", ")): they leave the machine, so the DNS delay applies"))
        }
        return findings
    }
}
