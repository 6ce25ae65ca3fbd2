import ArgumentParser
import Foundation
import Netlink
import Profiles
import Shaping

/// Writes the scripts the comparison runs: linkcond's own steps as plain `tc` commands
/// (iproute2), and the nearest tcconfig equivalent.
///
/// Rendering linkcond's plan step by step makes the tc script build the same tree and change the
/// same objects per switch, so the comparison is of mechanism (one process per command, text
/// parsing, a netlink socket each) and not of work.
struct TCScripts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tc-scripts",
        abstract: "Write build, switch and teardown scripts using tc, and switch scripts using tcconfig."
    )

    @Option(help: "Interface to shape.") var interface: String
    @Option(help: "Directory of profile files.") var profiles: String
    @Option(name: .customLong("cycle"), help: "Profile file names in switching order; repeat.") var cycle: [String]
    @Option(help: "Directory to write the scripts to.") var out: String

    func run() throws {
        let catalog = ProfileCatalog.load(from: [profiles])
        let target = ShapingTarget(interface: interface)
        let planner = Planner()
        let plans = try cycle.map { stem in
            let entry = try catalog.entry(named: stem)
            return (stem, entry.profile, planner.plan(entry.profile, on: target))
        }
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try write("tc-build.sh", plans[plans.count - 1].2.buildSteps.map(\.action).map(render))
        try write("tc-teardown.sh", TrafficPlan.teardownSteps(for: target).map(render))
        for (index, (stem, profile, plan)) in plans.enumerated() {
            let previous = plans[(index + plans.count - 1) % plans.count].2
            let steps = previous.changeSteps(to: plan)?.map(\.action) ?? []
            try write("tc-switch-\(stem).sh", steps.map(render))
            try write("tcconfig-\(stem).sh", tcconfig(profile))
        }
        print("wrote tc and tcconfig scripts for \(cycle.count) profiles to \(out)")
    }

    private func write(_ name: String, _ lines: [String]) throws {
        let text = "#!/bin/sh\nset -e\n" + lines.joined(separator: "\n") + "\n"
        try text.write(toFile: (out as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    /// One iproute2 command per step.
    func render(_ step: TrafficStep) -> String {
        switch step {
        case .createIFB(let name):
            return "ip link add \(name) type ifb && ip link set \(name) up"
        case .deleteLink(let name):
            return "ip link del \(name) 2>/dev/null || true"
        case .addQdisc(let device, let node), .changeQdisc(let device, let node):
            let verb = if case .addQdisc = step { "add" } else { "change" }
            return "tc qdisc \(verb) dev \(device) \(placement(node.parent, node.handle)) \(render(node.settings, handle: node.handle))"
        case .deleteQdisc(let device, let parent, _):
            return "tc qdisc del dev \(device) \(parent == .root ? "root" : "ingress") 2>/dev/null || true"
        case .addClass(let device, let node), .changeClass(let device, let node):
            let verb = if case .addClass = step { "add" } else { "change" }
            let options = node.encoded
            return "tc class \(verb) dev \(device) parent \(node.parent) classid \(node.classID) htb rate \(options.rateBytesPerSecond * 8)bit ceil \(options.ceilBytesPerSecond * 8)bit burst \(options.burstBytes)b cburst \(options.ceilBurstBytes)b quantum \(options.quantumBytes)"
        case .addFilter(let device, let node):
            let keys = node.keys.isEmpty ? [U32Key(offset: 0, value: 0, mask: 0)] : node.keys
            let matches = keys.map { "match u32 0x\(String($0.value, radix: 16)) 0x\(String($0.mask, radix: 16)) at \($0.offset)" }.joined(separator: " ")
            let action: String
            switch node.target {
            case .classify(let classID): action = "flowid \(classID)"
            case .redirect(let target): action = "action mirred egress redirect dev \(target)"
            }
            return "tc filter add dev \(device) parent \(node.parent) protocol \(node.protocolType) prio \(node.priority) u32 \(matches) \(action)"
        }
    }

    private func placement(_ parent: TrafficControlHandle, _ handle: TrafficControlHandle) -> String {
        switch parent {
        case .root: return "root handle \(handle)"
        case .ingressParent: return "handle \(handle)"
        default: return "parent \(parent) handle \(handle)"
        }
    }

    private func render(_ settings: QdiscSettings, handle: TrafficControlHandle) -> String {
        switch settings {
        case .htb(let defaultClass): return "htb default \(String(defaultClass.minor, radix: 16)) r2q 10"
        case .pfifo(let limit): return "pfifo limit \(limit)"
        case .ingress: return "ingress"
        case .netem(let netem):
            return "netem delay \(netem.delay.microseconds)us \(netem.jitter.microseconds)us loss \(netem.loss.percent)% limit \(netem.limitPackets)"
        }
    }

    /// tcconfig's nearest equivalent: one `tcset --change` per direction, `tcdel` for an
    /// unshaped one. tcconfig has no per-port DNS delay.
    func tcconfig(_ profile: Profile) -> [String] {
        [("outgoing", profile.uplink), ("incoming", profile.downlink)].map { direction, conditions in
            guard !conditions.isUnshaped else {
                return "tcdel \(interface) --direction \(direction) >/dev/null 2>&1 || true"
            }
            var options: [String] = []
            if let bandwidth = conditions.bandwidth { options.append("--rate \(bandwidth.bitsPerSecond)bps") }
            if !conditions.delay.isZero { options.append("--delay \(conditions.delay.microseconds)us") }
            if !conditions.jitter.isZero { options.append("--delay-distro \(conditions.jitter.microseconds)us") }
            if !conditions.loss.isZero { options.append("--loss \(conditions.loss.percent)%") }
            return "tcset \(interface) --direction \(direction) \(options.joined(separator: " ")) --change >/dev/null"
        }
    }
}
