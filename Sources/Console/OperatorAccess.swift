import Synchronization

/// Who may do more than read: operators, signed in with a token the CLI got from the console's
/// token socket (`linkcond console token`), which expires. Tokens and sessions live in memory
/// only: a restarted console forgets them all.
///
/// Bounded everywhere: at most `maximumTokens` tokens and `maximumSessions` sessions (the oldest
/// go first), and a sign-in refused after `failuresAllowed` wrong tokens from one address in a
/// minute, or `globalFailuresAllowed` from all of them.
public final class OperatorAccess: Sendable {
    public struct Session: Sendable, Equatable {
        public var id: String
        /// A second secret the page sends back with every change (`X-CSRF-Token`): a cross-site
        /// request cannot read it.
        public var csrf: String
        public var expires: ContinuousClock.Instant
    }

    /// Why a sign-in was refused.
    public enum Refusal: Error, Equatable {
        case wrongToken
        /// Too many wrong tokens: try again in the seconds given.
        case tooManyAttempts(retryAfter: Int)
    }

    static let maximumTokens = 64
    static let maximumSessions = 1024
    static let failuresAllowed = 5
    static let globalFailuresAllowed = 30
    static let failureWindow = Duration.seconds(60)
    static let longestToken = Duration.seconds(7 * 24 * 3600)

    private struct State {
        var tokens: [(token: [UInt8], expires: ContinuousClock.Instant)] = []
        var sessions: [String: Session] = [:]
        var failures: [(address: String, at: ContinuousClock.Instant)] = []
    }

    private let state = Mutex(State())
    private let clock = ContinuousClock()

    public init() {}

    /// A new token valid for `lifetime` (at most a week).
    public func issueToken(for lifetime: Duration) -> String {
        let token = "lct_" + Self.randomHex(bytes: 24)
        let expires = clock.now.advanced(by: min(lifetime, Self.longestToken))
        state.withLock { state in
            state.tokens.removeAll { $0.expires <= clock.now }
            if state.tokens.count >= Self.maximumTokens { state.tokens.removeFirst() }
            state.tokens.append((Array(token.utf8), expires))
        }
        return token
    }

    /// A session for `token` if it is a live one; from `address`, for the limit on wrong tokens.
    public func signIn(token: String, from address: String) -> Result<Session, Refusal> {
        let now = clock.now
        return state.withLock { state in
            state.failures.removeAll { now - $0.at > Self.failureWindow }
            let mine = state.failures.filter { $0.address == address }
            if mine.count >= Self.failuresAllowed || state.failures.count >= Self.globalFailuresAllowed {
                let oldest = (mine.count >= Self.failuresAllowed ? mine : state.failures).first!.at
                let wait = Self.failureWindow - (now - oldest)
                return .failure(.tooManyAttempts(retryAfter: max(1, Int(wait.components.seconds) + 1)))
            }
            let offered = Array(token.utf8)
            state.tokens.removeAll { $0.expires <= now }
            // Every live token compared in full: how long this takes says nothing of which matched.
            var match: ContinuousClock.Instant?
            for live in state.tokens where Self.constantTimeEqual(live.token, offered) {
                match = live.expires
            }
            guard let expires = match else {
                state.failures.append((address, now))
                return .failure(.wrongToken)
            }
            let session = Session(id: Self.randomHex(bytes: 32), csrf: Self.randomHex(bytes: 16), expires: expires)
            state.sessions = state.sessions.filter { $0.value.expires > now }
            if state.sessions.count >= Self.maximumSessions,
               let oldest = state.sessions.min(by: { $0.value.expires < $1.value.expires })?.key {
                state.sessions[oldest] = nil
            }
            state.sessions[session.id] = session
            return .success(session)
        }
    }

    /// The live session a cookie names.
    public func session(_ id: String?) -> Session? {
        guard let id else { return nil }
        let now = clock.now
        return state.withLock { state in
            guard let session = state.sessions[id] else { return nil }
            guard session.expires > now else {
                state.sessions[id] = nil
                return nil
            }
            return session
        }
    }

    public func signOut(_ id: String) {
        _ = state.withLock { $0.sessions.removeValue(forKey: id) }
    }

    /// Seconds until `session` ends.
    public func secondsLeft(_ session: Session) -> Int {
        max(0, Int((session.expires - clock.now).components.seconds))
    }

    static func randomHex(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for _ in 0..<count {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
