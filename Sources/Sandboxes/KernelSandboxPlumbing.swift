#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CPidfd
import Glibc
import Netlink

/// The real plumbing: netlink through libnl for devices, addresses and routes, libnftables for
/// NAT. IPv4 forwarding is turned on for the sandbox's host end and for `uplinks` (where replies
/// come back in), and the uplinks where it was off are written to `ledger` first, so that a
/// restarted daemon still turns it back off.
public final class KernelSandboxPlumbing: SandboxPlumbing {
    private let uplinks: @Sendable () -> [String]
    private let ledger: String?
    private var inMemoryLedger: [String] = []
    public var stepFault: (@Sendable (_ step: String) -> Bool)?

    /// `uplinks` are read at each plumbing: the default route may move.
    public init(uplinks: @escaping @Sendable () -> [String], ledger: String?) {
        self.uplinks = uplinks
        self.ledger = ledger
    }

    public func pin(process pid: Int32) -> PinnedProcess? {
        let descriptor = pidfd_open(pid, 0)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard stat("/proc/\(pid)", &status) == 0 else {
            close(descriptor)
            return nil
        }
        return PinnedProcess(
            pid: pid, owner: status.st_uid,
            // Signal 0 checks without sending; EPERM (no CAP_KILL, as under the shipped unit) still
            // means the process is there, only ESRCH that it exited.
            stillRunning: { pidfd_send_signal(descriptor, 0, nil, 0) == 0 || errno == EPERM },
            release: { close(descriptor) }
        )
    }

    public func checkFresh(namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError) {
        let names: [String]
        do {
            let file = try NetworkNamespaceFile(path: path, expected: identity)
            names = try NetlinkSocket(in: file).linkNames()
        } catch {
            throw SandboxError(code: .plumbingFailed, message: "cannot look into \(path): \(error)")
        }
        let others = names.filter { $0 != "lo" }
        guard others.isEmpty else {
            throw SandboxError(
                code: .namespaceInUse,
                message: "the network namespace \(path) already has \(others.sorted().joined(separator: ", ")); a sandbox is made only of a fresh one (linkcond run --isolated makes it)"
            )
        }
    }

    public func plumb(_ sandbox: SandboxAddressing, namespaceAt path: String, identity: NamespaceIdentity) throws(SandboxError) {
        do {
            try plumbDevices(sandbox, namespaceAt: path, identity: identity)
        } catch {
            _ = tearDown(sandbox)
            throw SandboxError(code: .plumbingFailed, message: "cannot join sandbox \(sandbox.index) to the host: \(error)")
        }
        do throws(SandboxError) {
            let nft = try NFTables()
            // A table left by a daemon killed halfway would otherwise get the rule twice.
            _ = try? nft.run(sandbox.natRemoval)
            if stepFault?("add table ip \(sandbox.natTable)") == true {
                throw SandboxError(code: .natFailed, message: "nftables refused 'add table ip \(sandbox.natTable)': fault injected by linkcondd's test hook")
            }
            try nft.run(sandbox.natRuleset)
        } catch {
            _ = tearDown(sandbox)
            throw error
        }
    }

    /// Each kernel step of joining the sandbox, in order, each through `gate` first.
    private func plumbDevices(_ sandbox: SandboxAddressing, namespaceAt path: String, identity: NamespaceIdentity) throws(NetlinkError) {
        let host = try NetlinkSocket()
        let file = try NetworkNamespaceFile(path: path, expected: identity)
        let inside = try NetlinkSocket(in: file)
        let peer = SandboxAddressing.sandboxInterface
        let hostEnd = sandbox.hostInterface
        try gate("add veth \(hostEnd) with \(peer) in \(path)")
        try host.addVethPair(named: hostEnd, peer: peer, peerNamespace: file)
        try gate("add \(sandbox.hostAddressText) to \(hostEnd)")
        try host.addIPv4Address(sandbox.hostAddress, prefixLength: SandboxAddressing.prefixLength, to: hostEnd)
        try gate("turn IPv4 forwarding on for \(hostEnd)")
        try host.setIPv4Forwarding(true, on: hostEnd)
        try gate("set \(hostEnd) up")
        try host.setUp(hostEnd)
        try gate("set lo up in \(path)")
        try inside.setUp("lo")
        try gate("add \(sandbox.sandboxAddressText) to \(peer) in \(path)")
        try inside.addIPv4Address(sandbox.sandboxAddress, prefixLength: SandboxAddressing.prefixLength, to: peer)
        try gate("set \(peer) up in \(path)")
        try inside.setUp(peer)
        try gate("add the default route via \(sandbox.hostAddressText) in \(path)")
        try inside.addIPv4DefaultRoute(via: sandbox.hostAddress, on: peer)
        for uplink in uplinks() where try host.link(named: uplink) != nil {
            guard try !host.ipv4Forwarding(on: uplink) else { continue }
            // Recorded before it is turned on: a daemon killed in between still turns it off.
            try remember(uplink)
            try gate("turn IPv4 forwarding on for \(uplink)")
            try host.setIPv4Forwarding(true, on: uplink)
        }
    }

    /// Fails the step about to run when the test hook says so.
    private func gate(_ step: String) throws(NetlinkError) {
        guard stepFault?(step) == true else { return }
        throw NetlinkError(
            code: .invalid, operation: step, errno: EINVAL, reason: "Invalid argument",
            kernelMessage: "fault injected by linkcondd's test hook"
        )
    }

    public func handOver(_ sandbox: SandboxAddressing) throws(SandboxError) {
        do {
            try NetfilterSocket(in: nil).deleteConnections(markedWith: sandbox.connectionMark)
        } catch {
            throw SandboxError(code: .natFailed, message: "cannot hand sandbox \(sandbox.index) over (its NAT mappings stay): \(error)")
        }
    }

    public func forwardDropChains() -> [ForwardDropChain] {
        guard let nft = try? NFTables(), let chains = try? nft.run("list chains\n") else { return [] }
        return ForwardDropChain.find(inChains: chains) { family, table in
            (try? nft.run("list table \(family) \(table)\n")) ?? ""
        }
    }

    public func tearDown(_ sandbox: SandboxAddressing) -> [String] {
        var problems: [String] = []
        do {
            try NetlinkSocket().deleteLink(named: sandbox.hostInterface)
        } catch where error.code == .noSuchDevice || error.code == .notFound {
            // Gone with its namespace, or never made.
        } catch {
            problems.append("\(sandbox.hostInterface): \(error)")
        }
        do {
            try NFTables().run(sandbox.natRemoval)
        } catch where error.kernelReason?.contains("No such file or directory") == true {
            // Never made, or removed already.
        } catch {
            problems.append("\(sandbox.natTable): \(error)")
        }
        return problems
    }

    public func restoreForwarding() -> [String] {
        let turnedOn = recorded()
        guard !turnedOn.isEmpty else { return [] }
        var problems: [String] = []
        let socket: NetlinkSocket
        do {
            socket = try NetlinkSocket()
        } catch {
            return ["IPv4 forwarding on \(turnedOn.joined(separator: ", ")): \(error)"]
        }
        for uplink in turnedOn {
            do {
                try socket.setIPv4Forwarding(false, on: uplink)
            } catch where error.code == .noSuchDevice || error.code == .notFound {
                // The device is gone, and its setting with it.
            } catch {
                problems.append("IPv4 forwarding on \(uplink): \(error)")
            }
        }
        if problems.isEmpty { forget() }
        return problems
    }

    // MARK: The ledger of forwarding linkcond turned on

    private func recorded() -> [String] {
        guard let ledger else { return inMemoryLedger }
        guard let text = try? String(contentsOfFile: ledger, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    private func remember(_ uplink: String) throws(NetlinkError) {
        var names = recorded()
        guard !names.contains(uplink) else { return }
        names.append(uplink)
        guard let ledger else {
            inMemoryLedger = names
            return
        }
        do {
            try Data((names.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: ledger), options: .atomic)
        } catch {
            throw NetlinkError(code: .other, operation: "record IPv4 forwarding on \(uplink) in \(ledger)", reason: "\(error)")
        }
    }

    private func forget() {
        inMemoryLedger = []
        if let ledger { unlink(ledger) }
    }
}
