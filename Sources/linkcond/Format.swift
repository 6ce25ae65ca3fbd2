import ControlAPI

/// Human-readable renderings of the API's documents.
enum Format {
    static func status(_ status: StatusResponse) -> String {
        let exempt = status.exemptions.isEmpty ? "nothing" : status.exemptions.joined(separator: ", ")
        guard let profile = status.profile else {
            return "\(status.interface): off (since \(status.since))\nexempt: \(exempt)"
        }
        return """
            \(status.interface): \(profile.name) (since \(status.since))
            \(profile.summary)
            exempt: \(exempt)
            """
    }

    static func profile(_ profile: ProfileDocument) -> String {
        var lines = [profile.name]
        if !profile.description.isEmpty { lines.append(profile.description) }
        lines.append("")
        lines.append(row("", "bandwidth", "delay", "jitter", "loss"))
        lines.append(direction("downlink", profile.downlink))
        lines.append(direction("uplink", profile.uplink))
        lines.append("DNS delay: \(profile.dnsDelay == "0ms" ? "none" : "+" + profile.dnsDelay)")
        lines.append("file: \(profile.file)")
        return lines.joined(separator: "\n")
    }

    static func profileTable(_ profiles: [ProfileSummary], active: String?) -> String {
        let width = (profiles.map(\.name.count).max() ?? 0) + 2
        return profiles.map { profile in
            let marker = profile.name == active ? "* " : "  "
            return marker + profile.name.padding(width) + profile.summary
        }.joined(separator: "\n")
    }

    private static func direction(_ label: String, _ direction: DirectionDocument) -> String {
        row(label, direction.bandwidth ?? "unlimited", direction.delay, direction.jitter, direction.loss)
    }

    private static func row(_ columns: String...) -> String {
        columns.map { $0.padding(11) }.joined().trimmingTrailingSpaces
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }

    var trimmingTrailingSpaces: String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
