import Glibc
import IPAddressText
import Logging
import Netlink
import Profiles
import Shaping
import Synchronization

/// Takes the packets that failure tables queue, in every namespace. A DNS query for a name that
/// fails gets "no such name" or "server failure" from the server it was sent to (or, for a
/// timeout, nothing), any other query passes on unchanged. A packet a failure rejects (an
/// offline connection attempt, a datagram to a refused port) is held for `rejectionHold` and
/// then let on, to the chain that rejects it (`QueueDuty.holdBeforeRejection` says why).
///
/// One thread for the daemon listens on every queue: a queue is a netlink socket of its
/// namespace, bound while a table uses it. The answer leaves a transparent UDP socket made in
/// the namespace, bound to the address and port the query went to, so that the app's resolver
/// (a connected socket) takes it; the query itself is dropped.
public final class QueueResponder: QueuedPacketAnswering, Sendable {
    private struct TableKey: Hashable {
        var namespace: NamespaceIdentity?
        var table: String
    }

    private struct QueueKey: Hashable {
        var namespace: NamespaceIdentity?
        var number: UInt16
    }

    private final class Listener: @unchecked Sendable {
        let queue: NetfilterQueue
        let duty: QueueDuty
        /// The namespace the answers are sent in; `nil` for the daemon's own.
        let namespace: NetworkNamespaceFile?
        /// Whether an answer that could not be sent was logged: once per queue, not per query.
        var toldOfUnanswered = false
        /// The packets held, with when each is let on, oldest first (at most the
        /// queue's `NetfilterQueue.maximumWaiting`: the kernel lets the rest pass on unheld).
        var held: [(id: UInt32, due: ContinuousClock.Instant)] = []

        /// Packets still held go on now, before the queue closes (which would drop them).
        deinit {
            for attempt in held { queue.decide(attempt.id, .accept) }
        }

        init(queue: NetfilterQueue, duty: QueueDuty, namespace: NetworkNamespaceFile?) {
            self.queue = queue
            self.duty = duty
            self.namespace = namespace
        }
    }

    private struct State: @unchecked Sendable {
        var tables: [TableKey: [UInt16: QueueDuty]] = [:]
        var listeners: [QueueKey: Listener] = [:]
        /// Listeners no table uses, closed by the thread (which may be reading them) or taken
        /// back if a table wants the queue again first.
        var retired: [QueueKey: Listener] = [:]
        var threadStarted = false
    }

    private let state = Mutex(State())
    /// A pipe whose write end wakes the thread: after a change of queues, or to close one.
    private let wake: (read: Int32, write: Int32)
    private let logger: Logger

    public init(logger: Logger = Logger(label: "linkcond.queues")) {
        self.logger = logger
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        self.wake = (ends[0], ends[1])
    }

    public func answer(
        _ queues: [UInt16: QueueDuty], forTable table: String, inNamespaceAt path: String?, identity: NamespaceIdentity?
    ) throws(NetlinkError) -> [UInt16: QueueDuty] {
        let tableKey = TableKey(namespace: path == nil ? nil : identity, table: table)
        let result: Result<[UInt16: QueueDuty], NetlinkError> = state.withLock { state in
            let previous = state.tables[tableKey] ?? [:]
            var others: [UInt16: QueueDuty] = [:]
            for (key, queues) in state.tables where key.namespace == tableKey.namespace && key != tableKey {
                others.merge(queues) { first, _ in first }
            }
            for (number, duty) in queues {
                if let other = others[number], other != duty {
                    return .failure(NetlinkError(
                        code: .other, operation: "take the packets of netfilter queue \(number)",
                        reason: "another target's table there uses the same queue for \(other), not \(duty)"
                    ))
                }
            }
            var opened: [QueueKey: Listener] = [:]
            for (number, duty) in queues {
                let key = QueueKey(namespace: tableKey.namespace, number: number)
                if state.listeners[key] != nil { continue }
                if let listener = state.retired.removeValue(forKey: key) {
                    opened[key] = listener
                    continue
                }
                do throws(NetlinkError) {
                    let file = try path.map { (path) throws(NetlinkError) in try NetworkNamespaceFile(path: path, expected: identity) }
                    opened[key] = Listener(queue: try NetfilterQueue(number: number, in: file), duty: duty, namespace: file)
                } catch {
                    // Those opened for this call go again; those taken back from retirement retire again.
                    for (key, listener) in opened { state.retired[key] = listener }
                    return .failure(error)
                }
            }
            state.listeners.merge(opened) { _, new in new }
            state.tables[tableKey] = queues.isEmpty ? nil : queues
            let wanted = Set(state.tables.filter { $0.key.namespace == tableKey.namespace }.values.flatMap(\.keys))
            for key in state.listeners.keys where key.namespace == tableKey.namespace && !wanted.contains(key.number) {
                state.retired[key] = state.listeners.removeValue(forKey: key)
            }
            if !state.threadStarted && !state.listeners.isEmpty {
                state.threadStarted = true
                startThread()
            }
            return .success(previous)
        }
        wakeThread()
        return try result.get()
    }

    private func wakeThread() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private func startThread() {
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            let responder = Unmanaged<QueueResponder>.fromOpaque(argument!).takeRetainedValue()
            responder.listen()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        if created == 0 {
            pthread_detach(thread)
        } else {
            logger.error("cannot start the DNS responder's thread: \(String(cString: strerror(created)))")
        }
    }

    /// How long a packet is held before its rejection: long past the moment its `connect` or
    /// `send` lets go of the socket (microseconds), short beside the 100 ms an app may wait.
    static let rejectionHold: Duration = .milliseconds(2)

    /// The thread: waits on every queue, the wake-up and the next held attempt's time; answers
    /// what arrives, lets on what is due, closes what retired.
    private func listen() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let clock = ContinuousClock()
        while true {
            let listeners = state.withLock { state -> [Listener] in
                state.retired.removeAll()
                return Array(state.listeners.values)
            }
            var descriptors = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            descriptors += listeners.map { pollfd(fd: $0.queue.descriptor, events: Int16(POLLIN), revents: 0) }
            let nextDue = listeners.compactMap { $0.held.first?.due }.min()
            let timeout = nextDue.map { Self.milliseconds(until: $0, now: clock.now) } ?? -1
            guard poll(&descriptors, nfds_t(descriptors.count), timeout) >= 0 || errno == EINTR else {
                logger.error("the queue responder cannot wait for packets: \(String(cString: strerror(errno)))")
                return
            }
            if descriptors[0].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                _ = read(wake.read, &bytes, bytes.count)
            }
            for (index, listener) in listeners.enumerated() where descriptors[index + 1].revents != 0 {
                for packet in listener.queue.receive(into: &buffer) {
                    if case .holdBeforeRejection = listener.duty {
                        listener.held.append((packet.id, clock.now.advanced(by: Self.rejectionHold)))
                    } else {
                        listener.queue.decide(packet.id, respond(to: packet.bytes, for: listener))
                    }
                }
            }
            let now = clock.now
            for listener in listeners where !listener.held.isEmpty {
                let due = listener.held.prefix { $0.due <= now }
                for attempt in due { listener.queue.decide(attempt.id, .accept) }
                listener.held.removeFirst(due.count)
            }
        }
    }

    /// Whole milliseconds from `now` to `due`, rounded up (poll's timeout); 0 once it is due.
    static func milliseconds(until due: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Int32 {
        let left = now.duration(to: due)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        guard seconds < Int64(Int32.max) / 1000 else { return Int32.max }
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// What becomes of one queued packet: the answer sent when it is a query for a name that fails.
    private func respond(to packet: ArraySlice<UInt8>, for listener: Listener) -> NetfilterQueue.Verdict {
        guard case .answerDNS(let failure) = listener.duty, let datagram = QueuedDatagram(packet: packet),
              let query = DNSQuery(parsing: datagram.payload), failure.covers(query.name) else { return .accept }
        let code: UInt8
        switch failure.kind {
        case .timeout: return .drop
        case .nxdomain: code = 3
        case .servfail: code = 2
        }
        let answer = query.answer(code: code)
        let sent: Int32 = if let namespace = listener.namespace {
            (try? namespace.whileInside("answer a DNS query") { Self.send(answer, answering: datagram) }) ?? EINVAL
        } else {
            Self.send(answer, answering: datagram)
        }
        guard sent == 0 else {
            // The server the query went to answers it instead: better than no answer at all.
            guard !listener.toldOfUnanswered else { return .accept }
            listener.toldOfUnanswered = true
            logger.warning("cannot answer a DNS query for \(query.name) as \(formatIPAddress(datagram.destination)): \(String(cString: strerror(sent))); it passes, and so will others it cannot answer")
            return .accept
        }
        return .drop
    }

    /// Sends `answer` from the query's destination to its source; 0, or the errno. Through a
    /// socket bound to that address and port when it can be bound; when a server of this machine
    /// holds them (a gateway's own resolver), as a whole packet through a raw socket.
    private static func send(_ answer: [UInt8], answering datagram: QueuedDatagram) -> Int32 {
        let bound = sendBound(answer, answering: datagram)
        guard bound == EADDRINUSE else { return bound }
        return sendRaw(answer, answering: datagram)
    }

    /// The answer as a datagram of a transparent socket bound to the query's destination.
    private static func sendBound(_ answer: [UInt8], answering datagram: QueuedDatagram) -> Int32 {
        let family = datagram.version == 4 ? AF_INET : AF_INET6
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        // IP_TRANSPARENT (19), IPV6_TRANSPARENT (75): bound to an address that is not this machine's.
        let transparent = datagram.version == 4 ? setsockopt(descriptor, Int32(IPPROTO_IP), 19, &on, size) : setsockopt(descriptor, Int32(IPPROTO_IPV6), 75, &on, size)
        guard transparent == 0, setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, size) == 0 else { return errno }
        let from = SocketAddress(datagram.destination, port: datagram.destinationPort)
        let to = SocketAddress(datagram.source, port: datagram.sourcePort)
        guard from.withPointer({ bind(descriptor, $0, $1) }) == 0 else { return errno }
        let sent = to.withPointer { address, length in answer.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, 0, address, length) } }
        return sent == answer.count ? 0 : errno
    }

    /// The answer as a packet built whole (`AnswerDatagram`) and sent through a raw socket,
    /// which needs no port of its own.
    private static func sendRaw(_ answer: [UInt8], answering datagram: QueuedDatagram) -> Int32 {
        guard let packet = AnswerDatagram(answering: datagram, payload: answer) else { return EMSGSIZE }
        return RawPacket.send(packet.bytes, to: datagram.source)
    }
}

/// An IPv4 or IPv6 address and port as the socket calls take them.
struct SocketAddress {
    private var storage = sockaddr_storage()
    private let length: socklen_t

    init(_ address: [UInt8], port: UInt16) {
        if address.count == 4 {
            var inet = sockaddr_in()
            inet.sin_family = sa_family_t(AF_INET)
            inet.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &inet.sin_addr) { $0.copyBytes(from: address) }
            withUnsafeMutableBytes(of: &storage) { target in withUnsafeBytes(of: inet) { target.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else {
            var inet6 = sockaddr_in6()
            inet6.sin6_family = sa_family_t(AF_INET6)
            inet6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &inet6.sin6_addr) { $0.copyBytes(from: address.prefix(16)) }
            withUnsafeMutableBytes(of: &storage) { target in withUnsafeBytes(of: inet6) { target.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    }

    func withPointer<Value>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Value) -> Value {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }
}
