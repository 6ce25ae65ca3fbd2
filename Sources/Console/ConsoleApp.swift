import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondClient
import Glibc
import LinkCondVocabulary
import NIOHTTP1

/// The console's routes: its page, and `/api/…`, a narrow face of the control API for browsers.
///
/// Reading is open, as on the control socket (lease holders' command lines without their
/// arguments, unless an operator asks). A change needs an operator's session, except one: a
/// device behind the gateway (gateway mode) may switch its own condition. Every change must come
/// from the console's own page: the session's CSRF secret in `X-CSRF-Token` (for a device, the
/// one its page got from `/api/session`), and an `Origin`, when the browser sends one, that is
/// the console's.
public struct ConsoleApp: Sendable {
    let backend: any ConsoleBackend
    let access: OperatorAccess
    /// Gateway mode, when set.
    let devices: DeviceScope?
    let statsCache = StatsCache()
    /// One line per change and sign-in, saying who asked: the daemon's history names only the
    /// console's own user.
    let log: @Sendable (String) -> Void

    static let sessionCookie = "lc_session"
    static let csrfCookie = "lc_csrf"
    static let csrfHeader = "X-CSRF-Token"

    public init(backend: any ConsoleBackend, access: OperatorAccess, devices: DeviceScope?, log: @escaping @Sendable (String) -> Void = Self.standardError) {
        self.backend = backend
        self.access = access
        self.devices = devices
        self.log = log
    }

    /// Each line whole on stderr, which a service manager keeps (the journal).
    public static let standardError: @Sendable (String) -> Void = { line in
        let bytes = Array("linkcond console: \(line)\n".utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    public func respond(to request: ConsoleRequest) async -> ConsoleResponse {
        var response: ConsoleResponse
        do throws(ConsoleError) {
            response = try await route(request)
        } catch {
            response = error.response
        }
        Self.secure(&response, api: request.path.hasPrefix("/api/"))
        return response
    }

    private func route(_ request: ConsoleRequest) async throws(ConsoleError) -> ConsoleResponse {
        if let asset = ConsoleAssets.asset(at: request.path) {
            try require(request, .GET, .HEAD)
            return ConsoleResponse(status: .ok, contentType: asset.contentType, body: request.method == .HEAD ? [] : asset.bytes)
        }
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.first == "api" else { throw ConsoleError(.notFound, "no such page: \(printable(request.path))") }
        let session = access.session(request.cookie(Self.sessionCookie))
        if request.method != .GET {
            try checkOrigin(request, session: session)
        }
        guard segments.count <= 3 else { throw ConsoleError(.notFound, "no such endpoint: \(printable(request.path))") }
        switch (segments.count > 1 ? segments[1] : "", segments.count > 2 ? segments[2] : nil) {
        case ("session", nil):
            try require(request, .GET)
            return sessionView(request, session: session)
        case ("sign-in", nil):
            try require(request, .POST)
            return try signIn(request)
        case ("sign-out", nil):
            try require(request, .POST)
            if let session { access.signOut(session.id) }
            var response = Self.json(["signedIn": false])
            response.headers.add(name: "Set-Cookie", value: "\(Self.sessionCookie)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
            return response
        case ("conditions", nil):
            try require(request, .GET)
            var list = try await call { () throws(ControlClientError) in try await backend.conditions() }
            if session == nil {
                for index in list.conditions.indices {
                    if let holder = list.conditions[index].lease?.holder {
                        list.conditions[index].lease?.holder = holder.withoutArguments
                    }
                }
            }
            return Self.json(list)
        case ("conditions", let encoded?):
            try require(request, .PUT, .DELETE)
            let id = try decoded(encoded, what: "condition id")
            try authorizeChange(of: id, request: request, session: session)
            if request.method == .DELETE {
                let status = try await call { () throws(ControlClientError) in try await backend.deactivate(condition: id) }
                log("\(who(request, session)) switched \(id) off")
                return Self.json(status)
            }
            let choice = try Self.decode(ConditionChoice.self, from: request.body)
            let status = try await call { () throws(ControlClientError) in try await backend.activate(choice.profile, condition: id) }
            log("\(who(request, session)) put \(id) on \(printable(choice.profile))")
            return Self.json(status)
        case ("stats", nil):
            try require(request, .GET)
            let stats = try await call { () throws(ControlClientError) in
                try await statsCache.read { () throws(ControlClientError) in try await backend.stats() }
            }
            return Self.json(stats)
        case ("profiles", nil):
            try require(request, .GET, .POST)
            guard request.method == .POST else {
                return Self.json(try await call { () throws(ControlClientError) in try await backend.profiles() })
            }
            try requireOperator(session)
            let save = try Self.decode(ProfileSave.self, from: request.body)
            let saved = try await call { () throws(ControlClientError) in
                try await backend.saveProfile(ProfileDefinition(yaml: save.yaml, source: "the console"), replace: save.replace ?? false)
            }
            log("\(who(request, session)) saved the profile '\(printable(saved.name))' (\(saved.file))")
            return Self.json(saved, status: .created)
        case ("profiles", let encoded?):
            try require(request, .GET, .DELETE)
            let name = try decoded(encoded, what: "profile name")
            guard request.method == .DELETE else {
                return Self.json(try await call { () throws(ControlClientError) in try await backend.profile(named: name) })
            }
            try requireOperator(session)
            let deleted = try await call { () throws(ControlClientError) in try await backend.deleteProfile(named: name) }
            log("\(who(request, session)) deleted the profile '\(printable(deleted.name))'")
            return Self.json(deleted)
        case ("history", nil):
            try require(request, .GET)
            var history = try await call { () throws(ControlClientError) in try await backend.history(limit: 100) }
            if session == nil {
                for index in history.entries.indices {
                    history.entries[index].requester = history.entries[index].requester?.withoutArguments
                }
            }
            return Self.json(history)
        default:
            throw ConsoleError(.notFound, "no such endpoint: \(request.method) \(printable(request.path))")
        }
    }

    // MARK: Who may do what

    /// Who asked, for the log: an operator's session (its first eight characters) or a device.
    private func who(_ request: ConsoleRequest, _ session: OperatorAccess.Session?) -> String {
        let peer = request.peer.map(DeviceScope.unmapped) ?? "?"
        return session.map { "the operator of session \($0.id.prefix(8)) (from \(peer))" } ?? "the device \(peer)"
    }

    /// What the page needs to know of whoever asks: operator or not, and, in gateway mode, which
    /// device this is and whether it is behind the gateway at all. Sets the CSRF cookie a
    /// device's page sends back.
    private func sessionView(_ request: ConsoleRequest, session: OperatorAccess.Session?) -> ConsoleResponse {
        let device = devices.flatMap { scope in request.peer.map(scope.device(at:)) }
        let csrf = session?.csrf ?? request.cookie(Self.csrfCookie).flatMap { Self.isToken($0) ? $0 : nil } ?? OperatorAccess.randomHex(bytes: 16)
        var response = Self.json(SessionView(
            operator: session != nil, secondsLeft: session.map(access.secondsLeft), csrf: csrf,
            gateway: devices?.interface, device: device.map { SessionView.DeviceView(address: $0.address, condition: $0.condition, problem: $0.problem) }
        ))
        if session == nil {
            response.headers.add(name: "Set-Cookie", value: "\(Self.csrfCookie)=\(csrf); Path=/; HttpOnly; SameSite=Strict")
        }
        return response
    }

    private func signIn(_ request: ConsoleRequest) throws(ConsoleError) -> ConsoleResponse {
        let offered = try Self.decode(SignIn.self, from: request.body)
        switch access.signIn(token: offered.token, from: request.peer ?? "local") {
        case .success(let session):
            log("an operator signed in from \(request.peer ?? "the token socket") (session \(session.id.prefix(8)))")
            var response = Self.json(SessionView(operator: true, secondsLeft: access.secondsLeft(session), csrf: session.csrf, gateway: devices?.interface, device: nil))
            response.headers.add(
                name: "Set-Cookie",
                value: "\(Self.sessionCookie)=\(session.id); Path=/; Max-Age=\(access.secondsLeft(session)); HttpOnly; SameSite=Strict"
            )
            return response
        case .failure(.wrongToken):
            log("a wrong token from \(request.peer ?? "?")")
            throw ConsoleError(.forbidden, "that token is not one the console issued, or it has expired: get one with `sudo linkcond console token`")
        case .failure(.tooManyAttempts(let wait)):
            var error = ConsoleError(.tooManyAttempts, "too many wrong tokens: try again in \(wait) s")
            error.retryAfter = wait
            throw error
        }
    }

    /// A change: an operator's session may change any condition; without one, only a device's
    /// own, in gateway mode.
    private func authorizeChange(of id: String, request: ConsoleRequest, session: OperatorAccess.Session?) throws(ConsoleError) {
        if session != nil { return }
        guard let devices else {
            throw ConsoleError(.forbidden, "changing a condition needs an operator: sign in with a token from `sudo linkcond console token`")
        }
        let device = request.peer.map(devices.device(at:))
        guard let own = device?.condition else {
            throw ConsoleError(.forbidden, device?.problem ?? "the console cannot tell which device this is")
        }
        guard let asked = try? ConditionID(parsing: id), let mine = try? ConditionID(parsing: own), asked == mine else {
            throw ConsoleError(.forbidden, "this device (\(device!.address)) may change its own condition (\(own)) only; changing another's needs an operator's sign-in")
        }
    }

    private func requireOperator(_ session: OperatorAccess.Session?) throws(ConsoleError) {
        guard session != nil else {
            throw ConsoleError(.forbidden, "managing profiles needs an operator: sign in with a token from `sudo linkcond console token`")
        }
    }

    /// No change from another site: the page's secret back (a session's, or the device's CSRF
    /// cookie, which another site can neither read nor set), and the browser's `Origin`, when
    /// it sends one, this console's own.
    private func checkOrigin(_ request: ConsoleRequest, session: OperatorAccess.Session?) throws(ConsoleError) {
        if let origin = request.headers.first(name: "Origin"), let host = request.headers.first(name: "Host"),
           origin != "http://\(host)" && origin != "https://\(host)" {
            throw ConsoleError(.crossSite, "a change from another site (Origin \(printable(origin))) is refused")
        }
        if request.path == "/api/sign-in" { return }
        let expected = session?.csrf ?? request.cookie(Self.csrfCookie)
        guard let expected, let sent = request.headers.first(name: Self.csrfHeader),
              OperatorAccess.constantTimeEqual(Array(expected.utf8), Array(sent.utf8)) else {
            throw ConsoleError(.crossSite, "a change needs the console page's \(Self.csrfHeader): reload the page")
        }
    }

    // MARK: Parts

    private func require(_ request: ConsoleRequest, _ methods: HTTPMethod...) throws(ConsoleError) {
        guard methods.contains(request.method) else {
            var error = ConsoleError(.methodNotAllowed, "\(printable(request.path)) takes \(methods.map(\.rawValue).joined(separator: ", "))")
            error.allow = methods
            throw error
        }
    }

    private func decoded(_ segment: String, what: String) throws(ConsoleError) -> String {
        guard let text = PercentEncoding.decode(Substring(segment)), !text.isEmpty, text.utf8.count <= 256 else {
            throw ConsoleError(.badRequest, "malformed \(what) in the path")
        }
        return text
    }

    private func call<Value>(_ body: () async throws(ControlClientError) -> Value) async throws(ConsoleError) -> Value {
        do {
            return try await body()
        } catch {
            throw ConsoleError(error)
        }
    }

    static func isToken(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static func json<Value: Encodable>(_ value: Value, status: HTTPResponseStatus = .ok) -> ConsoleResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ConsoleResponse(status: status, contentType: "application/json", body: Array((try? encoder.encode(value)) ?? Data("{}".utf8)))
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from body: [UInt8]) throws(ConsoleError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(body))
        } catch {
            throw ConsoleError(.badRequest, "the request body is not the JSON this endpoint takes")
        }
    }

    /// Headers every answer carries: the page may load only its own script and style, may not
    /// be framed, and nothing is cached but the assets.
    static func secure(_ response: inout ConsoleResponse, api: Bool) {
        response.headers.replaceOrAdd(name: "Content-Security-Policy", value: ConsoleAssets.contentSecurityPolicy)
        response.headers.replaceOrAdd(name: "X-Content-Type-Options", value: "nosniff")
        response.headers.replaceOrAdd(name: "X-Frame-Options", value: "DENY")
        response.headers.replaceOrAdd(name: "Referrer-Policy", value: "no-referrer")
        response.headers.replaceOrAdd(name: "Cross-Origin-Opener-Policy", value: "same-origin")
        response.headers.replaceOrAdd(name: "Cross-Origin-Resource-Policy", value: "same-origin")
        response.headers.replaceOrAdd(name: "Cache-Control", value: api ? "no-store" : "no-cache")
    }
}

/// Text from a request, safe for a message: control characters escaped, cut short.
func printable(_ text: String) -> String {
    printableText(text, limit: 80)
}

/// `PUT /api/conditions/{id}`.
struct ConditionChoice: Decodable {
    var profile: String
}

/// `POST /api/profiles`: the profile as its file would have it.
struct ProfileSave: Decodable {
    var yaml: String
    var replace: Bool?
}

/// `POST /api/sign-in`.
struct SignIn: Decodable {
    var token: String
}

/// `GET /api/session`.
struct SessionView: Encodable {
    struct DeviceView: Encodable {
        var address: String
        var condition: String?
        var problem: String?
    }

    var `operator`: Bool
    var secondsLeft: Int?
    var csrf: String
    var gateway: String?
    var device: DeviceView?
}
