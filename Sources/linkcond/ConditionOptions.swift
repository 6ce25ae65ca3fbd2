import ArgumentParser
import ControlAPI
import LinkCondClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A condition without a profile file, as `tcset` users expect: `--rate 1Mbit --delay 100ms
/// --loss 5%` for both directions, `--down-…` and `--up-…` for one. The daemon validates the
/// values exactly as it validates a profile file.
struct ConditionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Bandwidth both ways: 32kbit, 1.5Mbit, 1Gbit.", valueName: "rate")) var rate: String?
    @Option(help: ArgumentHelp("Delay added each way: 100ms, 1.5s.", valueName: "time")) var delay: String?
    @Option(help: ArgumentHelp("Delay varies by up to this much each way (at most --delay).", valueName: "time")) var jitter: String?
    @Option(help: ArgumentHelp("Packets lost each way: 5%, 0.5%.", valueName: "percent")) var loss: String?
    @Option(name: .customLong("down-rate"), help: ArgumentHelp("Downlink bandwidth, instead of --rate.", valueName: "rate")) var downRate: String?
    @Option(name: .customLong("down-delay"), help: ArgumentHelp("Downlink delay.", valueName: "time")) var downDelay: String?
    @Option(name: .customLong("down-jitter"), help: ArgumentHelp("Downlink jitter.", valueName: "time")) var downJitter: String?
    @Option(name: .customLong("down-loss"), help: ArgumentHelp("Downlink loss.", valueName: "percent")) var downLoss: String?
    @Option(name: .customLong("up-rate"), help: ArgumentHelp("Uplink bandwidth, instead of --rate.", valueName: "rate")) var upRate: String?
    @Option(name: .customLong("up-delay"), help: ArgumentHelp("Uplink delay.", valueName: "time")) var upDelay: String?
    @Option(name: .customLong("up-jitter"), help: ArgumentHelp("Uplink jitter.", valueName: "time")) var upJitter: String?
    @Option(name: .customLong("up-loss"), help: ArgumentHelp("Uplink loss.", valueName: "percent")) var upLoss: String?
    @Option(name: .customLong("dns-delay"), help: ArgumentHelp("Extra delay for DNS queries.", valueName: "time")) var dnsDelay: String?
    @Flag(help: "Airplane mode: new connections fail at once with \"network unreachable\", nothing arrives.") var offline = false
    @Flag(help: "The server is down: connections are refused (TCP reset, ICMP port unreachable).") var refuse = false
    @Flag(name: .customLong("link-down"), help: "The link is down, as Wi-Fi dropping out (a sandbox's or namespace's link): its routes go unused, the app sees the change.")
    var linkDown = false
    @Option(name: .customLong("dns-failure"), help: ArgumentHelp("Lookups fail: nxdomain (no such name), servfail (server failure) or timeout (no answer).", valueName: "failure"))
    var dnsFailure: String?
    @Option(name: .customLong("dns-failure-for"), help: ArgumentHelp("Only lookups of this name fail (repeat it; *.example.com for the names below); others are answered as before.", valueName: "name"))
    var dnsFailureNames: [String] = []

    /// Each profile field set, with the option that set it (the per-direction one wins).
    var fields: [(field: String, option: String, value: String)] {
        var fields: [(String, String, String)] = []
        for (direction, prefix) in [("downlink", "down"), ("uplink", "up")] {
            let specific = direction == "downlink"
                ? [("bandwidth", downRate), ("delay", downDelay), ("jitter", downJitter), ("loss", downLoss)]
                : [("bandwidth", upRate), ("delay", upDelay), ("jitter", upJitter), ("loss", upLoss)]
            let shared = [("bandwidth", "rate", rate), ("delay", "delay", delay), ("jitter", "jitter", jitter), ("loss", "loss", loss)]
            for ((field, value), (_, sharedOption, sharedValue)) in zip(specific, shared) {
                if let value {
                    let option = field == "bandwidth" ? "rate" : field
                    fields.append(("\(direction).\(field)", "--\(prefix)-\(option)", value))
                } else if let sharedValue {
                    fields.append(("\(direction).\(field)", "--\(sharedOption)", sharedValue))
                }
            }
        }
        if let dnsDelay { fields.append(("dns.delay", "--dns-delay", dnsDelay)) }
        if offline { fields.append(("failure", "--offline", "offline")) }
        if refuse { fields.append(("failure", "--refuse", "refuse")) }
        if linkDown { fields.append(("failure", "--link-down", "link-down")) }
        if let dnsFailure { fields.append(("dns.failure", "--dns-failure", dnsFailure)) }
        if !dnsFailureNames.isEmpty {
            fields.append(("dns.names", "--dns-failure-for", dnsFailureNames.joined(separator: ", ")))
        }
        return fields
    }

    var isEmpty: Bool { fields.isEmpty }

    func validate() throws {
        if [offline, refuse, linkDown].filter({ $0 }).count > 1 {
            throw ValidationError("--offline, --refuse and --link-down are three failures; a condition has one at a time")
        }
        if !dnsFailureNames.isEmpty && dnsFailure == nil {
            throw ValidationError("--dns-failure-for names the lookups that fail; say how with --dns-failure nxdomain, servfail or timeout")
        }
    }

    /// The options as a profile, in YAML: what a profile file with these values would say.
    var definition: ProfileDefinition {
        let fields = self.fields
        var yaml = "name: ad hoc\n"
        yaml += "description: \(Self.quoted(fields.map { $0.field == "failure" ? $0.option : "\($0.option) \($0.value)" }.joined(separator: " ")))\n"
        for (field, _, value) in fields where !field.contains(".") {
            yaml += "\(field): \(Self.quoted(value))\n"
        }
        for section in ["downlink", "uplink", "dns"] {
            let inSection = fields.filter { $0.field.hasPrefix(section + ".") }
            guard !inSection.isEmpty else { continue }
            yaml += "\(section):\n"
            for (field, _, value) in inSection where field != "dns.names" {
                yaml += "  \(field.dropFirst(section.count + 1)): \(Self.quoted(value))\n"
            }
            if section == "dns" && !dnsFailureNames.isEmpty {
                yaml += "  names: [\(dnsFailureNames.map(Self.quoted).joined(separator: ", "))]\n"
            }
        }
        return ProfileDefinition(yaml: yaml, source: "command line")
    }

    /// The option that set a profile field, for error messages.
    func option(for field: String) -> String? {
        fields.first { $0.field == field }?.option
    }

    /// A YAML double-quoted scalar: JSON's string syntax is one, so nothing typed can break out.
    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}

/// What `activate` and `run` were asked for: a profile by name, a profile file, or options.
enum ProfileSelection {
    case named(String)
    case file(ProfileDefinition)
    case options(ConditionOptions)

    /// `argument` is a file when it names one (a path, or an existing `.yaml`/`.yml` file);
    /// otherwise a profile's name.
    static func resolve(argument: String?, options: ConditionOptions, commandName: String) throws -> ProfileSelection {
        switch (argument, options.isEmpty) {
        case (nil, true):
            throw ValidationError("name a profile (linkcond list shows them), a profile file, or the condition itself: \(commandName) --rate 1Mbit --delay 100ms --loss 1%")
        case (_?, false):
            throw ValidationError("give a profile or options like --rate, not both")
        case (nil, false):
            return .options(options)
        case (let argument?, true):
            guard argument.contains("/") || argument.hasSuffix(".yaml") || argument.hasSuffix(".yml") else {
                return .named(argument)
            }
            guard FileManager.default.isReadableFile(atPath: argument) || argument.contains("/") else { return .named(argument) }
            return .file(try definition(fromFile: argument))
        }
    }

    /// A profile file's text, to be parsed by the daemon, named by its absolute path.
    static func definition(fromFile argument: String) throws -> ProfileDefinition {
        guard let data = FileManager.default.contents(atPath: argument) else {
            throw ValidationError("cannot read the profile file \(argument)")
        }
        let path = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
        return ProfileDefinition(yaml: String(decoding: data, as: UTF8.self), source: URL(fileURLWithPath: path).standardized.path)
    }

    var profile: String? {
        if case .named(let name) = self { return name }
        return nil
    }

    var definition: ProfileDefinition? {
        switch self {
        case .named: return nil
        case .file(let definition): return definition
        case .options(let options): return options.definition
        }
    }

    /// The daemon's refusal of a definition, in the words of the options that made it.
    func explain(_ error: ControlClientError) -> ControlClientError {
        guard case .options(let options) = self, let problem = error.apiError?.problem,
              let option = options.option(for: problem.field)
        else { return error }
        var explained = error
        explained.message = "\(option): \(problem.message)"
        return explained
    }
}
