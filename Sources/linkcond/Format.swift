import ControlAPI
import LinkCondClient

/// Human-readable renderings of the API's documents.
enum Format {
    /// One condition; with `traffic`, what its shaping carried and dropped.
    static func status(_ status: StatusResponse, traffic: ConditionStatsDocument? = nil) -> String {
        let exempt = status.exemptions.isEmpty ? "nothing" : status.exemptions.joined(separator: ", ")
        let sandbox = status.sandbox.map { sandbox in
            (["sandbox: \(sandbox.address) via \(sandbox.hostInterface) (\(sandbox.gateway)), NAT through the host"]
                + (sandbox.warnings ?? []).map { "warning: \($0)" }).joined(separator: "\n")
        }
        let addresses = status.addresses.map { "addresses: " + $0.joined(separator: ", ") }
        guard let profile = status.profile else {
            return ["\(status.id): off (since \(status.since))", addresses, sandbox, "exempt: \(exempt)"].compactMap { $0 }.joined(separator: "\n")
        }
        var lines = ["\(status.id): \(profile.name) (since \(status.since))"]
        if let addresses { lines.append(addresses) }
        lines.append(profile.summary)
        if let line = traffic.flatMap(trafficLine) { lines.append(line) }
        if let scenario = status.scenario { lines.append(scenarioLine(scenario)) }
        if let trace = status.trace { lines.append(traceLine(trace)) }
        if let sandbox { lines.append(sandbox) }
        if let lease = status.lease {
            var text = "lease held by \(lease.holder)"
            if let left = lease.secondsLeft { text += ", \(left)s left" }
            if lease.kind == .clientBound { text += ", while its client runs" }
            lines.append(text + "; then \(lease.restores)")
        }
        lines.append("exempt: \(exempt)")
        return lines.joined(separator: "\n")
    }

    /// `eth0: reset 3 (TCP connections with 192.0.2.7:443)`, with those that ended first.
    static func reset(_ answer: ResetResponse) -> String {
        var line = "\(answer.condition.id): reset \(answer.reset) (\(answer.connections))"
        if answer.alreadyGone > 0 { line += "; \(answer.alreadyGone) more ended on their own first" }
        return line
    }

    /// One condition, with its kernel objects when the daemon sent them.
    static func status(_ status: StatusResponse, traffic: ConditionStatsDocument? = nil, verbose: Bool) -> String {
        let text = Self.status(status, traffic: traffic)
        guard verbose, let objects = status.kernel else { return text }
        return text + "\n" + kernelObjects(objects)
    }

    /// Every condition, one block each, the default one first.
    static func conditions(_ list: ConditionListResponse, stats: StatsResponse? = nil, verbose: Bool = false) -> String {
        list.conditions.map { condition in
            status(condition, traffic: stats?.conditions.first { $0.id == condition.id }, verbose: verbose)
        }.joined(separator: "\n\n")
    }

    /// `traffic: down 10453 bytes, 38 packets, 0 dropped, 0 queued; up …`: counters since the
    /// condition's objects were made. Rates need two reads a moment apart: `GET /v1/stats`.
    static func trafficLine(_ traffic: ConditionStatsDocument) -> String? {
        func direction(_ name: String, _ counters: DirectionStatsDocument?) -> String? {
            counters.map { "\(name) \($0.bytes) bytes, \($0.packets) packets, \(dropped($0.droppedPackets, loss: $0.droppedByLoss, queue: $0.droppedByQueue)), \($0.queuedPackets) queued" }
        }
        let directions = [direction("down", traffic.downlink), direction("up", traffic.uplink)].compactMap { $0 }
        return directions.isEmpty ? nil : "traffic: " + directions.joined(separator: "; ")
    }


    /// `12 dropped (10 by loss, 2 by a full queue)`, or `0 dropped`.
    static func dropped(_ total: UInt64, loss: UInt64, queue: UInt64) -> String {
        total == 0 ? "0 dropped" : "\(total) dropped (\(loss) by loss, \(queue) by a full queue)"
    }

    /// `trace: 12.3s in; down 9.6Mbit now (until 13.0s); up outage, 4kbit (until 16.5s)`: where a
    /// trace-driven profile's traces are, counted from when they began, not wrapped at a period.
    static func traceLine(_ trace: TracePlaybackDocument) -> String {
        func direction(_ name: String, _ rate: TraceRateDocument?) -> String? {
            guard let rate else { return nil }
            let now = rate.capacity == rate.rate ? "\(rate.rate) now" : "outage, \(rate.rate)"
            return "\(name) \(now)" + (rate.changesAtMilliseconds.map { " (until \(seconds(Double($0) / 1000)))" } ?? " (steady)")
        }
        let directions = [direction("down", trace.downlink), direction("up", trace.uplink)].compactMap { $0 }
        return "trace: \(seconds(Double(trace.elapsedMilliseconds) / 1000)) in; " + directions.joined(separator: "; ")
    }

    /// `scenario: Subway, step 2 of 2 (Tunnel), 3.2s in; ends after 7s (3.8s left); next: Good mobile`
    static func scenarioLine(_ scenario: ScenarioStatusDocument) -> String {
        var line = "scenario: \(scenario.name), step \(scenario.step) of \(scenario.steps) (\(scenario.stepName))"
        if scenario.round > 1 { line += ", round \(scenario.round)" }
        line += ", \(seconds(scenario.secondsInStep)) in; ends \(scenario.endsBy)"
        if let left = scenario.secondsLeft { line += " (\(seconds(left)) left)" }
        if let trigger = scenario.trigger {
            let done = trigger.unit == "bytes" ? "\(trigger.progress) of \(trigger.threshold) bytes" : "\(trigger.progress) of \(trigger.threshold) packets"
            line += " (\(done) so far)"
        }
        if let next = scenario.next { line += "; next: \(next)" }
        return line + "; seed \(scenario.seed)"
    }

    private static func seconds(_ value: Double) -> String {
        value >= 100 ? "\(Int(value.rounded()))s" : "\((value * 10).rounded() / 10)s"
    }

    /// A scenario and its steps, as `linkcond scenarios` lists them.
    static func scenario(_ summary: ScenarioSummary) -> String {
        var lines = ["\(summary.name) (\(summary.repeats))"]
        if !summary.description.isEmpty { lines.append("  " + summary.description) }
        for (index, step) in summary.steps.enumerated() {
            lines.append("  \(index + 1). \(step)")
        }
        return lines.joined(separator: "\n")
    }

    /// `2026-11-22T09:14:03Z  eth0  Slow Net -> Black Hole  (lease, for 30s)  by uid 1000 (alice), pid 42 'pytest'`
    static func historyLine(_ entry: HistoryEntryDocument) -> String {
        var line = "\(entry.time)  " + (entry.condition.map { "\($0)  " } ?? "") + "\(entry.from) -> \(entry.to)  (\(entry.reason)"
        if let detail = entry.detail { line += ", \(detail)" }
        line += ")"
        if let requester = entry.requester { line += "  by \(requester)" }
        return line
    }

    /// A lease of `linkcond run` that ended while the command still ran, or whose end the
    /// daemon never confirmed.
    static func leaseInterruption(_ outcome: LeaseOutcome) -> String {
        guard case .ended(let event) = outcome else {
            return "lost the connection to linkcondd (did it crash?); the lease is gone with it, so a restarted daemon restores the previous condition; check 'linkcond status'"
        }
        let now = event.status.profile?.name ?? "off"
        switch event.reason {
        case .expired: return "the --for limit passed; the condition is back to \(now) while the command still runs"
        case .takenOver: return "\(event.by.map(\.description) ?? "another client") took over the condition (now \(now)); the command still runs"
        case .shutdown: return "linkcondd stopped and removed all shaping; the command still runs unshaped"
        case .namespaceEnded: return "the network namespace of the condition's interface is gone, and its condition with it"
        case .released, .none: return "the lease ended; the condition is \(now)"
        }
    }

    /// linkcond's objects in the kernel with their counters, one per line, like `tc -s` says them.
    static func kernelObjects(_ objects: [KernelObjectDocument]) -> String {
        guard !objects.isEmpty else { return "kernel: linkcond has nothing on the interface" }
        let device = (objects.map(\.device.count).max() ?? 0) + 2
        let object = (objects.map(\.object.count).max() ?? 0) + 2
        return (["kernel:"] + objects.map { item in
            "  " + item.device.padding(device) + item.object.padding(object)
                + "sent \(item.packets) pkt (\(item.bytes) B), dropped \(item.drops), overlimits \(item.overlimits), queued \(item.queuedPackets) pkt (\(item.queuedBytes) B)"
        }).joined(separator: "\n")
    }

    static func profile(_ profile: ProfileDocument) -> String {
        var lines = [profile.name]
        if !profile.description.isEmpty { lines.append(profile.description) }
        lines.append("")
        lines.append(row("", "bandwidth", "delay", "jitter", "loss"))
        lines.append(direction("downlink", profile.downlink))
        lines.append(direction("uplink", profile.uplink))
        lines.append("DNS delay: \(profile.dnsDelay == "0ms" ? "none" : "+" + profile.dnsDelay)")
        if let failure = profile.failure { lines.append("failure: \(failure)") }
        if let dnsFailure = profile.dnsFailure {
            let names = profile.dnsFailureNames ?? []
            lines.append("DNS failure: \(dnsFailure)" + (names.isEmpty ? " (every name)" : " for " + names.joined(separator: ", ")))
        }
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
