import Profiles

/// What linkcondd does with the packets a failure table hands to one netfilter queue.
public enum QueueDuty: Hashable, Sendable, CustomStringConvertible {
    /// DNS queries: one for a name that fails is answered so (or, for a timeout, dropped); any
    /// other passes unchanged.
    case answerDNS(DNSFailure)
    /// Packets a failure rejects with an ICMP error, held for a moment and then let on to the
    /// chain that rejects them: Offline's connection attempts (TCP SYNs) and the datagrams sent
    /// to a refused port. Rejected at once, a SYN's error reaches its socket while `connect`
    /// still holds it, and a connecting socket that is held keeps an ICMP error only as a soft
    /// one: the connection would wait for its SYN's retransmission, a second later (every IPv6
    /// connect, and a blocking one on IPv4). A datagram dropped by the filter its send passes
    /// fails that send with EPERM. Rejected a moment later, each error reaches the app as an
    /// error from a real network does: the connect fails at once, the datagram's next call
    /// hears ECONNREFUSED.
    case holdBeforeRejection

    public var description: String {
        switch self {
        case .answerDNS(let failure): "DNS failure '\(failure)'"
        case .holdBeforeRejection: "packets held before their rejection"
        }
    }
}
