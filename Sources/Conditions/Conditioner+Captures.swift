import LinkCondVocabulary
import Profiles
import Shaping

// Packet captures: what a capture of a condition reads (its interface, its IFB, its peers), and
// the condition's changes told to it as they happen, to be written into the trace.

/// A capture that may begin: where its packets are, which of them are the condition's, and
/// what is in force as it begins.
public struct CaptureGrant: Sendable {
    public var serial: UInt64
    public var condition: ConditionID
    public var interface: String
    /// The IFB whose tree shapes the downlink, when the condition has one.
    public var ifb: String?
    /// The condition's namespace, when it is not the daemon's.
    public var namespacePath: String?
    /// The peers' networks (`192.0.2.7/32`) and port; all of the interface's packets when empty.
    public var networks: [String]
    public var port: UInt16?
    public var transports: [String]
    /// A gateway device's condition: the interface faces the device from the far side.
    public var facesTheApp: Bool
    /// A loopback condition: `port` is a local server's, and each packet crosses the interface
    /// twice.
    public var portIsLocalServer: Bool
    /// The condition in force as the capture begins, as its first note says it.
    public var firstNote: String
}

/// How a running capture hears of its condition's changes: each as a line for the trace, with
/// the IFB that now carries the downlink's tree (`nil` while the condition has none).
struct CaptureListener {
    var condition: ConditionID
    var notes: @Sendable (_ note: String, _ ifb: String?) -> Void
}

extension Conditioner {
    /// Captures that may run at once: each holds two kernel rings of a few MB.
    public static let maximumCaptures = 8

    /// Lets a capture of the condition `id` names begin (held or not: capturing changes no
    /// condition): where its packets are, and from now on each change of the condition is told
    /// to `notes` as a line for the trace. Recorded in the history; `endCapture` ends it.
    public func beginCapture(
        on id: ConditionID? = nil, by requester: Requester, notes: @escaping @Sendable (_ note: String, _ ifb: String?) -> Void
    ) throws(ConditionsRefusal) -> CaptureGrant {
        try checkRunning()
        let resolvedID = try resolved(id)
        let held = try heldCondition(resolvedID)
        let condition = if let held { held } else { try factory.makeAbsent(resolvedID, beside: registry, now: now) }
        guard captures.count < Self.maximumCaptures else {
            throw ConditionsRefusal(CaptureRefusal(
                reason: .tooMany, condition: condition.id, detail: "\(Self.maximumCaptures) captures run already; end one first"
            ))
        }
        if condition.id.namespace != nil, condition.namespaceIdentity == nil {
            throw ConditionsRefusal(CaptureRefusal(reason: .namespaceGone, condition: condition.id, detail: "its network namespace is not known"))
        }
        var grant = CaptureGrant(
            serial: 0, condition: condition.id, interface: condition.target.interface,
            ifb: held != nil && condition.convergence.applied != nil ? condition.target.ifb : nil,
            namespacePath: condition.id.namespace?.path, networks: [], port: nil, transports: [], facesTheApp: false,
            portIsLocalServer: condition.target.interface == Self.loopback,
            firstNote: Self.captureNote(reason: "in force as the capture began", condition: condition, detail: nil)
        )
        if case .match(_, let match) = condition.slot {
            grant.networks = match.networks.map(\.description)
            grant.port = match.port
            grant.transports = match.transports.map(\.rawValue)
            grant.facesTheApp = match.isDevice
        }
        lastCaptureSerial += 1
        grant.serial = lastCaptureSerial
        captures[grant.serial] = CaptureListener(condition: condition.id, notes: notes)
        let profile = condition.policy.effective?.profile.name ?? "off"
        record(condition, from: profile, to: profile, reason: "capture", requester: requester, detail: "capture \(grant.serial) began")
        return grant
    }

    /// The capture `grant` let begin has ended; `detail` says what it wrote.
    public func endCapture(_ grant: CaptureGrant, by requester: Requester, detail: String) {
        guard captures.removeValue(forKey: grant.serial) != nil else { return }
        let profile = registry[grant.condition]?.policy.effective?.profile.name ?? "off"
        record(grant.condition, from: profile, to: profile, reason: "capture", requester: requester, detail: "capture \(grant.serial) ended: \(detail)")
    }

    /// Tells the captures of `condition` of a change just recorded.
    func tellCaptures(of condition: Condition, reason: String, detail: String?) {
        guard !captures.isEmpty, reason != "capture" else { return }
        let note = Self.captureNote(reason: reason, condition: condition, detail: detail)
        let ifb = condition.convergence.applied != nil ? condition.target.ifb : nil
        for listener in captures.values where listener.condition == condition.id {
            listener.notes(note, ifb)
        }
    }

    /// `linkcond: Slow Net (activate): down: 780kbit 100ms; up: …`, or `off`.
    static func captureNote(reason: String, condition: Condition, detail: String?) -> String {
        let profile = condition.policy.effective?.profile
        var note = "linkcond: \(profile?.name ?? "off") (\(reason))"
        if let profile { note += ": " + profile.summary }
        if let step = condition.scenario, !step.finished { note += "; scenario '\(step.scenario.name)', \(step.step.displayName)" }
        if let detail { note += "; \(detail)" }
        return note
    }
}
