@testable import Console
import ControlAPI
import Foundation
import NIOHTTP1
import Testing

/// The console's routes against a daemon in memory: who may change what, and what no request
/// from elsewhere may do.
@Suite("The console's routes")
struct ConsoleAppTests {
    let backend = RecordingBackend(conditions: ["eth0", "lan0@device=192.168.50.11", "lan0@device=192.168.50.12"])
    let access = OperatorAccess()
    static let lan = DeviceScope(interface: "lan0", networks: [.init(address: [192, 168, 50, 1], prefixLength: 24)])
    static let host = "192.168.50.1:8053"

    let logged = LogLines()

    func app(gateway: Bool = false) -> ConsoleApp {
        ConsoleApp(backend: backend, access: access, devices: gateway ? Self.lan : nil, log: { [logged] in logged.append($0) })
    }

    func send(
        _ app: ConsoleApp, _ method: HTTPMethod, _ uri: String, _ body: String = "", from peer: String = "127.0.0.1",
        headers: [(String, String)] = []
    ) async -> ConsoleResponse {
        var all = HTTPHeaders([("Host", Self.host)])
        for (name, value) in headers { all.add(name: name, value: value) }
        return await app.respond(to: ConsoleRequest(method: method, uri: uri, headers: all, body: Array(body.utf8), peer: peer))
    }

    func json(_ response: ConsoleResponse) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
    }

    func code(_ response: ConsoleResponse) throws -> String? {
        (try json(response)["error"] as? [String: Any])?["code"] as? String
    }

    /// The page's CSRF secret for PEER, as its cookie and its header.
    func secret(_ app: ConsoleApp, from peer: String) async throws -> [(String, String)] {
        let session = await send(app, .GET, "/api/session", from: peer)
        let csrf = try #require(try json(session)["csrf"] as? String)
        #expect(session.headers["Set-Cookie"].first?.contains("lc_csrf=\(csrf); Path=/; HttpOnly; SameSite=Strict") == true)
        return [("Cookie", "lc_csrf=\(csrf)"), ("X-CSRF-Token", csrf)]
    }

    @Test("The page and its assets come with a strict Content-Security-Policy; unknown paths are 404")
    func assets() async throws {
        let app = app()
        let page = await send(app, .GET, "/")
        #expect(page.status == .ok)
        #expect(page.headers["Content-Type"] == ["text/html; charset=utf-8"])
        #expect(page.headers["Content-Security-Policy"].first?.contains("script-src 'self'") == true)
        #expect(page.headers["Content-Security-Policy"].first?.contains("frame-ancestors 'none'") == true)
        #expect(page.headers["X-Frame-Options"] == ["DENY"])
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains("style=") && !html.contains(" on"), "no inline script, style or handler")
        #expect(await send(app, .GET, "/console.js").headers["Content-Type"] == ["text/javascript; charset=utf-8"])
        #expect(await send(app, .GET, "/etc/passwd").status == .notFound)
        #expect(await send(app, .GET, "/api/../../etc/passwd").status == .notFound)
        #expect(await send(app, .POST, "/").status == .methodNotAllowed)
    }

    @Test("Reading is open; a viewer sees lease holders' commands without their arguments")
    func reading() async throws {
        let app = app()
        _ = try await backend.activate("Slow Net", condition: "eth0")
        let list = await send(app, .GET, "/api/conditions")
        #expect(list.status == .ok)
        let text = String(decoding: list.body, as: UTF8.self)
        #expect(!text.contains("secret-token"))
        #expect(text.contains("\"command\":\"pytest\""))
        let history = String(decoding: await send(app, .GET, "/api/history").body, as: UTF8.self)
        #expect(!history.contains("secret-token"))
    }

    @Test("Without gateway mode, no change without an operator; with a token, any")
    func operatorChanges() async throws {
        let app = app()
        let secret = try await self.secret(app, from: "127.0.0.1")
        let refused = await send(app, .PUT, "/api/conditions/eth0", #"{"profile": "Slow Net"}"#, headers: secret)
        #expect(refused.status == .forbidden)
        #expect(try code(refused) == "forbidden")
        #expect(backend.changes.isEmpty)

        let token = access.issueToken(for: .seconds(60))
        let signedIn = await send(app, .POST, "/api/sign-in", #"{"token": "\#(token)"}"#)
        #expect(signedIn.status == .ok)
        let cookie = try #require(signedIn.headers["Set-Cookie"].first)
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let session = String(cookie.split(separator: ";")[0])
        let csrf = try #require(try json(signedIn)["csrf"] as? String)
        let changed = await send(app, .PUT, "/api/conditions/eth0", #"{"profile": "Slow Net"}"#, headers: [("Cookie", session), ("X-CSRF-Token", csrf)])
        #expect(changed.status == .ok)
        #expect(backend.changes == [.init(condition: "eth0", profile: "Slow Net")])
        let list = String(decoding: await send(app, .GET, "/api/conditions", headers: [("Cookie", session)]).body, as: UTF8.self)
        #expect(list.contains("secret-token"), "an operator sees the whole command")
        let saved = await send(app, .POST, "/api/profiles", #"{"yaml": "name: Mine\n"}"#, headers: [("Cookie", session), ("X-CSRF-Token", csrf)])
        #expect(saved.status == .created)
        let bad = await send(app, .POST, "/api/profiles", #"{"yaml": "oops"}"#, headers: [("Cookie", session), ("X-CSRF-Token", csrf)])
        #expect(bad.status == .badRequest)
        #expect(((try json(bad)["error"] as? [String: Any])?["problem"] as? [String: Any])?["field"] as? String == "name")
        #expect(await send(app, .POST, "/api/sign-out", "{}", headers: [("Cookie", session), ("X-CSRF-Token", csrf)]).status == .ok)
        #expect(await send(app, .PUT, "/api/conditions/eth0", #"{"profile": "Slow Net"}"#, headers: [("Cookie", session), ("X-CSRF-Token", csrf)]).status == .forbidden)
    }

    @Test("A device behind the gateway changes its own condition, and no other")
    func devices() async throws {
        let app = app(gateway: true)
        let session = try json(await send(app, .GET, "/api/session", from: "192.168.50.11"))
        let device = try #require(session["device"] as? [String: Any])
        #expect(device["condition"] as? String == "lan0@device=192.168.50.11")
        let secret = try await self.secret(app, from: "192.168.50.11")
        let own = await send(app, .PUT, "/api/conditions/lan0%40device%3D192.168.50.11", #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: secret)
        #expect(own.status == .ok)
        let other = await send(app, .PUT, "/api/conditions/lan0%40device%3D192.168.50.12", #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: secret)
        #expect(other.status == .forbidden)
        #expect(try code(other) == "forbidden")
        let whole = await send(app, .DELETE, "/api/conditions/lan0", from: "192.168.50.11", headers: secret)
        #expect(whole.status == .forbidden)
        let profiles = await send(app, .POST, "/api/profiles", #"{"yaml": "name: Mine\n"}"#, from: "192.168.50.11", headers: secret)
        #expect(profiles.status == .forbidden)
        // A dual-stack listener sees IPv4 peers as mapped addresses.
        let mapped = await send(app, .DELETE, "/api/conditions/lan0%40device%3D192.168.50.11", from: "::ffff:192.168.50.11", headers: secret)
        #expect(mapped.status == .ok)
        #expect(backend.changes == [.init(condition: "lan0@device=192.168.50.11", profile: "Slow Net"), .init(condition: "lan0@device=192.168.50.11", profile: nil)])
        #expect(logged.lines == ["the device 192.168.50.11 put lan0@device=192.168.50.11 on Slow Net", "the device 192.168.50.11 switched lan0@device=192.168.50.11 off"])

        let outside = try json(await send(app, .GET, "/api/session", from: "10.0.0.9"))
        let problem = try #require((outside["device"] as? [String: Any])?["problem"] as? String)
        #expect(problem.contains("not behind this gateway") && problem.contains("192.168.50.0/24"))
        let outsider = try await self.secret(app, from: "10.0.0.9")
        #expect(await send(app, .PUT, "/api/conditions/lan0%40device%3D10.0.0.9", #"{"profile": "Slow Net"}"#, from: "10.0.0.9", headers: outsider).status == .forbidden)
        #expect(backend.changes.count == 2)
    }

    @Test("No change from another site: a foreign Origin, or no page secret, is refused whoever asks")
    func crossSite() async throws {
        let app = app(gateway: true)
        let secret = try await self.secret(app, from: "192.168.50.11")
        let path = "/api/conditions/lan0%40device%3D192.168.50.11"
        let foreign = await send(app, .PUT, path, #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: secret + [("Origin", "http://evil.example")])
        #expect(foreign.status == .forbidden)
        #expect(try code(foreign) == "cross-site")
        let same = await send(app, .PUT, path, #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: secret + [("Origin", "http://\(Self.host)")])
        #expect(same.status == .ok)
        let noHeader = await send(app, .PUT, path, #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: [secret[0]])
        #expect(try code(noHeader) == "cross-site")
        let wrong = await send(app, .PUT, path, #"{"profile": "Slow Net"}"#, from: "192.168.50.11", headers: [secret[0], ("X-CSRF-Token", String(repeating: "0", count: 32))])
        #expect(try code(wrong) == "cross-site")
        let signIn = await send(app, .POST, "/api/sign-in", #"{"token": "x"}"#, headers: [("Origin", "http://evil.example")])
        #expect(try code(signIn) == "cross-site")
        #expect(backend.changes.count == 1)
    }

    @Test("Bad requests get a JSON error with a code; the daemon's refusals pass through")
    func badRequests() async throws {
        let app = app(gateway: true)
        let secret = try await self.secret(app, from: "192.168.50.11")
        let path = "/api/conditions/lan0%40device%3D192.168.50.11"
        #expect(try code(await send(app, .PUT, path, "not json", from: "192.168.50.11", headers: secret)) == "bad-request")
        #expect(try code(await send(app, .PUT, path, #"{"profile": "Nope"}"#, from: "192.168.50.11", headers: secret)) == "unknown-profile")
        #expect(try code(await send(app, .PUT, "/api/conditions/%ZZ", "{}", from: "192.168.50.11", headers: secret)) == "bad-request")
        #expect(try code(await send(app, .GET, "/api/nothing")) == "not-found")
        #expect(try code(await send(app, .GET, "/api/conditions/a/b/c")) == "not-found")
        let method = await send(app, .PATCH, "/api/stats", from: "192.168.50.11", headers: secret)
        #expect(method.status == .methodNotAllowed && method.headers["Allow"] == ["GET"])
    }
}

/// What the console logged.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []

    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
}

@Suite("Operators' tokens and sessions")
struct OperatorAccessTests {
    @Test("A token signs in until it expires; a wrong one does not")
    func tokens() throws {
        let access = OperatorAccess()
        let token = access.issueToken(for: .seconds(60))
        #expect(token.hasPrefix("lct_") && token.count == 52)
        let session = try access.signIn(token: token, from: "a").get()
        #expect(access.session(session.id) == session)
        #expect(access.secondsLeft(session) <= 60)
        #expect(access.signIn(token: token + "0", from: "a") == .failure(.wrongToken))
        let brief = access.issueToken(for: .milliseconds(1))
        Thread.sleep(forTimeInterval: 0.01)
        #expect(access.signIn(token: brief, from: "b") == .failure(.wrongToken))
        access.signOut(session.id)
        #expect(access.session(session.id) == nil)
        #expect(access.session("forged") == nil)
    }

    @Test("Five wrong tokens from one address a minute; the sixth waits, even if right; others go on")
    func rateLimit() throws {
        let access = OperatorAccess()
        let token = access.issueToken(for: .seconds(60))
        for _ in 0..<5 { #expect(access.signIn(token: "lct_wrong", from: "a") == .failure(.wrongToken)) }
        guard case .failure(.tooManyAttempts(let wait)) = access.signIn(token: token, from: "a") else {
            Issue.record("not limited")
            return
        }
        #expect((1...61).contains(wait))
        #expect((try? access.signIn(token: token, from: "b").get()) != nil)
    }

    @Test("Tokens are bounded in number; the oldest goes")
    func bounded() {
        let access = OperatorAccess()
        let first = access.issueToken(for: .seconds(60))
        for _ in 0..<OperatorAccess.maximumTokens { _ = access.issueToken(for: .seconds(60)) }
        #expect(access.signIn(token: first, from: "a") == .failure(.wrongToken))
    }

    @Test("Durations of the token socket")
    func durations() {
        #expect(TokenEndpoint.seconds("90s") == 90)
        #expect(TokenEndpoint.seconds("30m") == 1800)
        #expect(TokenEndpoint.seconds("7d") == 604_800)
        #expect(TokenEndpoint.seconds("1w") == nil)
        #expect(TokenEndpoint.seconds("") == nil)
        #expect(TokenEndpoint.seconds("99999999999999999999h") == nil)
    }
}

@Suite("Devices behind a gateway")
struct DeviceScopeTests {
    @Test("Networks contain their addresses; link-local and mapped addresses are read right")
    func networks() {
        let network = DeviceScope.Network(address: [192, 168, 50, 77], prefixLength: 20)
        #expect(network.contains([192, 168, 63, 1]))
        #expect(!network.contains([192, 168, 64, 1]))
        #expect(network.description == "192.168.48.0/20")
        #expect(DeviceScope.unmapped("::ffff:10.0.0.1") == "10.0.0.1")
        #expect(DeviceScope.unmapped("fd00::1") == "fd00::1")
        let scope = DeviceScope(interface: "lan0", networks: [.init(address: [0xfd, 0, 0, 0x50] + Array(repeating: 0, count: 11) + [1], prefixLength: 64)])
        #expect(scope.device(at: "fd00:50::abcd").condition == "lan0@device=fd00:50::abcd")
        #expect(scope.device(at: "192.168.50.1").problem?.contains("has no address of this family") == true)
        #expect(scope.device(at: "not an address").problem != nil)
    }

    @Test("The loopback interface's own networks are read from the system")
    func system() {
        #expect(DeviceScope.networks(of: "lo").contains(.init(address: [127, 0, 0, 1], prefixLength: 8)))
    }
}
