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
        case .deleteClass(let device, let node):
            return "tc class del dev \(device) classid \(node.classID)"
        case .addFilter(let device, let node), .replaceFilter(let device, let node):
            let verb = if case .addFilter = step { "add" } else { "replace" }
            if let flower = node.flowerFilter {
                return "tc filter \(verb) dev \(device) parent \(node.parent) \(flowerPlacement(flower)) flower skip_hw \(render(flower.key)) classid \(flower.classID)"
            }
            guard case .u32(let keys) = node.classifier else { return "" }
            let matches = (keys.isEmpty ? [U32Key(offset: 0, value: 0, mask: 0)] : keys)
                .map { "match u32 0x\(String($0.value, radix: 16)) 0x\(String($0.mask, radix: 16)) at \($0.offset)" }.joined(separator: " ")
            let action: String
            switch node.target {
            case .classify(let classID): action = "flowid \(classID)"
            case .redirect(let target): action = "action mirred egress redirect dev \(target)"
            }
            return "tc filter add dev \(device) parent \(node.parent) protocol \(node.protocolType) prio \(node.priority) u32 \(matches) \(action)"
        case .deleteFilter(let device, let node):
            guard let flower = node.flowerFilter else { return "" }
            return "tc filter del dev \(device) parent \(node.parent) \(flowerPlacement(flower)) flower"
        }
    }

    /// tc takes flower's IP keys only under `protocol ip` or `ipv6`, where linkcond attaches
    /// for every protocol with the IP version as a key; the nearest equivalent puts IPv6
    /// filters in a priority of their own, as one priority holds one protocol.
    private func flowerPlacement(_ filter: FlowerFilter) -> String {
        let isIPv6 = filter.key.etherType == .ipv6
        return "protocol \(isIPv6 ? "ipv6" : "ip") prio \(Int(filter.priority) + (isIPv6 ? 0x1000 : 0)) handle 0x\(String(filter.handle, radix: 16))"
    }

    private func render(_ key: FlowerKey) -> String {
        var words: [String] = []
        switch key.ipProtocol {
        case 6?: words.append("ip_proto tcp")
        case 17?: words.append("ip_proto udp")
        case 58?: words.append("ip_proto ipv6-icmp")
        case let number?: words.append("ip_proto \(number)")
        case nil: break
        }
        for (name, address) in [("src_ip", key.source), ("dst_ip", key.destination)] {
            guard let address else { continue }
            let text = address.address.count == 4
                ? address.address.map(String.init).joined(separator: ".")
                : stride(from: 0, to: 16, by: 2).map { String(UInt16(address.address[$0]) << 8 | UInt16(address.address[$0 + 1]), radix: 16) }.joined(separator: ":")
            words.append("\(name) \(text)/\(address.prefixLength)")
        }
        if let port = key.sourcePort { words.append("src_port \(port)") }
        if let port = key.destinationPort { words.append("dst_port \(port)") }
        // tc takes no type mask: the nearest equivalent matches the first type of the range.
        if let type = key.icmpv6Type { words.append("type \(type.value)") }
        return words.joined(separator: " ")
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
