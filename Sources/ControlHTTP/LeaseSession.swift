import Conditions
import ControlAPI
import Logging

/// A lease the router granted to a streaming connection (`POST /v1/leases`): the server starts
/// it, streams what it says and releases it when the client goes; what a lease does, and which
/// error answers a refusal, is the router's to say.
package struct LeaseSession: Sendable {
    /// A lease in force: the ticket that names it, and its first line.
    package struct Held: Sendable {
        let ticket: LeaseTicket
        package let first: LeaseEvent
    }

    package enum Beginning: Sendable {
        case held(Held)
        /// The error answer that refused it.
        case refused(ControlReply)
    }

    let conditioner: Conditioner
    let id: ConditionID?
    let choice: ProfileChoice
    let request: LeaseRequest
    let maximum: LeaseDuration?
    /// What a host name in the id resolved to, when the condition is new.
    let hostAddresses: [[UInt8]]
    let requester: Requester
    let logger: Logger

    /// Puts the lease in force, or answers why not. `onEnd` hears of an end the client did not
    /// cause (expiry, take-over, the daemon stopping), as the stream's last line.
    package func begin(onEnd: @escaping @Sendable (LeaseEvent) -> Void) async -> Beginning {
        do throws(ConditionsRefusal) {
            let held = try await conditioner.hold(
                choice, on: id, by: requester, maximum: maximum, force: request.force ?? false,
                replacingForeign: request.replaceForeign ?? false, sandbox: request.sandbox ?? false, hostAddresses: hostAddresses,
                onEnd: { onEnd(LeaseEvent($0)) }
            )
            return .held(Held(ticket: held.lease, first: LeaseEvent(event: .active, status: StatusResponse(held.status))))
        } catch {
            return .refused(ControlError(error).reply)
        }
    }

    /// The client let go: the lease ends and the previous condition comes back. Its last line,
    /// or `nil` when the lease had ended otherwise meanwhile (its last line is `onEnd`'s).
    package func release(_ held: Held) async -> LeaseEvent? {
        guard let restored = await conditioner.release(held.ticket) else { return nil }
        return LeaseEvent(event: .ended, reason: .released, status: StatusResponse(restored))
    }
}
