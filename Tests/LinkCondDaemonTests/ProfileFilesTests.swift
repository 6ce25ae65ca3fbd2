import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
import NIOHTTP1
import Profiles
import ShapingTestSupport
import Testing

/// `POST /v1/profiles` and `DELETE /v1/profiles/{name}` against real directories: a saved one
/// (where profiles go) searched before a built-in one (read-only).
@Suite("Saving and deleting profiles through the API")
struct ProfileFilesTests {
    let root: URL
    let saved: URL
    let builtIn: URL
    let kernel = FakeKernel(interfaces: ["eth0"])
    let router: ControlRouter

    static let slowNet = "name: Slow Net\ndescription: Built in.\ndownlink: { bandwidth: 32kbit, delay: 100ms }\nuplink: { bandwidth: 32kbit, delay: 100ms }\n"

    init() throws {
        root = try TestDaemon.temporaryDirectory()
        saved = root.appendingPathComponent("saved")
        builtIn = root.appendingPathComponent("built-in")
        try FileManager.default.createDirectory(at: saved, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: builtIn, withIntermediateDirectories: true)
        try Self.slowNet.write(to: builtIn.appendingPathComponent("slow-net.yaml"), atomically: true, encoding: .utf8)
        let directories = [saved.path, builtIn.path]
        router = ControlRouter(
            conditioner: TestDaemon.conditioner(
                kernel: kernel, catalog: ProfileCatalog.load(from: directories), profileDirectories: directories,
                profileFiles: ProfileFiles(directory: saved.path)
            ),
            authorizer: TestDaemon.authorizer
        )
    }

    func send(_ method: HTTPMethod, _ uri: String, _ body: String = "", as requester: Requester = TestDaemon.root) async -> ControlReply {
        await router.respond(to: ControlRequest(method: method, uri: uri, body: Array(body.utf8), requester: requester))
    }

    func save(_ yaml: String, replace: Bool = false, as requester: Requester = TestDaemon.root) async throws -> ControlReply {
        let request = SaveProfileRequest(definition: ProfileDefinition(yaml: yaml, source: "console"), replace: replace ? true : nil)
        return await send(.POST, APIPath.profiles, String(decoding: try JSONEncoder().encode(request), as: UTF8.self), as: requester)
    }

    func error(_ reply: ControlReply) throws -> ErrorResponse.Body {
        try JSONDecoder().decode(ErrorResponse.self, from: Data(reply.body)).error
    }

    func savedFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: saved.path).sorted()
    }

    static func phone(delay: String = "150ms") -> String {
        "name: My Phone 3G\ndescription: The lab's phone.\ndownlink: { bandwidth: 780kbit, delay: \(delay) }\nuplink: { bandwidth: 330kbit, delay: \(delay) }\n"
    }

    @Test("A new profile is written as a YAML file in the saved directory, listed, and writable; built-ins read-only")
    func create() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let reply = try await save(Self.phone())
        #expect(reply.status == .created)
        let document = try JSONDecoder().decode(ProfileDocument.self, from: Data(reply.body))
        #expect(document.file == saved.appendingPathComponent("my-phone-3g.yaml").path)
        #expect(document.readOnly == nil)
        #expect(try savedFiles() == ["my-phone-3g.yaml"])
        #expect(try String(contentsOf: saved.appendingPathComponent("my-phone-3g.yaml"), encoding: .utf8) == Self.phone())
        let listing = try JSONDecoder().decode(ProfileListResponse.self, from: Data(await send(.GET, APIPath.profiles).body))
        #expect(listing.profiles.map(\.name) == ["My Phone 3G", "Slow Net"])
        #expect(listing.profiles.map(\.readOnly) == [nil, true])
        let shown = try JSONDecoder().decode(ProfileDocument.self, from: Data(await send(.GET, APIPath.profile("my-phone-3g")).body))
        #expect(shown.downlink.bandwidth == "780kbit")
    }

    @Test("Saving a name that exists is refused unless replacing; replacing rewrites its own file")
    func replace() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(try await save(Self.phone()).status == .created)
        let again = try await save(Self.phone(delay: "300ms"))
        #expect(again.status == .conflict)
        #expect(try error(again).code == "profile-exists")
        #expect(try String(contentsOf: saved.appendingPathComponent("my-phone-3g.yaml"), encoding: .utf8) == Self.phone())
        let replaced = try await save(Self.phone(delay: "300ms"), replace: true)
        #expect(replaced.status == .ok)
        #expect(try savedFiles() == ["my-phone-3g.yaml"])
        let shown = try JSONDecoder().decode(ProfileDocument.self, from: Data(await send(.GET, APIPath.profile("My Phone 3G")).body))
        #expect(shown.downlink.delay == "300ms")
    }

    @Test("A condition in force under a replaced profile takes its new values")
    func replacedInForce() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(try await save(Self.phone()).status == .created)
        #expect(await send(.PUT, APIPath.condition, #"{"profile": "My Phone 3G"}"#).status == .ok)
        #expect(try await save(Self.phone(delay: "300ms"), replace: true).status == .ok)
        let status = try JSONDecoder().decode(StatusResponse.self, from: Data(await send(.GET, APIPath.status).body))
        #expect(status.profile?.downlink.delay == "300ms")
    }

    @Test("Built-in profiles can be neither replaced nor deleted, and stay as they were")
    func readOnly() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let replaced = try await save(Self.slowNet.replacingOccurrences(of: "32kbit", with: "1mbit"), replace: true)
        #expect(replaced.status == .conflict)
        #expect(try error(replaced).code == "read-only-profile")
        let deleted = await send(.DELETE, APIPath.profile("Slow Net"))
        #expect(deleted.status == .conflict)
        #expect(try error(deleted).code == "read-only-profile")
        #expect(try String(contentsOf: builtIn.appendingPathComponent("slow-net.yaml"), encoding: .utf8) == Self.slowNet)
        #expect(try savedFiles().isEmpty)
    }

    @Test("A bad profile names its line and field, and nothing is written")
    func badProfile() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let reply = try await save("name: Broken\ndownlink:\n  loss: 120%\n")
        #expect(reply.status == .badRequest)
        let body = try error(reply)
        #expect(body.code == "bad-profile")
        #expect(body.problem?.line == 3)
        #expect(body.problem?.field == "downlink.loss")
        #expect(try savedFiles().isEmpty)
        // Traces are files on the daemon's disk: a profile sent through the API may not name one.
        let traced = try await save("name: Traced\ndownlink: { trace: /etc/shadow }\n")
        #expect(try error(traced).code == "bad-profile")
        #expect(try await save("name: X").status == .created)
        #expect(await send(.POST, APIPath.profiles, #"{"definition": {"yaml": "name: Y", "source": "s"}, "overwrite": true}"#).status == .badRequest)
    }

    @Test("Deleting removes the saved file; a shadowed built-in of the same name shows again; unknown names are 404")
    func delete() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(try await save(Self.phone()).status == .created)
        let deleted = await send(.DELETE, APIPath.profile("my-phone-3g"))
        #expect(deleted.status == .ok)
        #expect(try JSONDecoder().decode(ProfileDocument.self, from: Data(deleted.body)).name == "My Phone 3G")
        #expect(try savedFiles().isEmpty)
        #expect(await send(.GET, APIPath.profile("My Phone 3G")).status == .notFound)
        #expect(try error(await send(.DELETE, APIPath.profile("My Phone 3G"))).code == "unknown-profile")

        // A saved profile may take a built-in's name only as a file put there by hand; deleting it
        // brings the built-in back.
        try Self.slowNet.replacingOccurrences(of: "32kbit", with: "1mbit").write(
            to: saved.appendingPathComponent("slow-net.yaml"), atomically: true, encoding: .utf8)
        #expect(await send(.POST, APIPath.reload).status == .ok)
        #expect(await send(.DELETE, APIPath.profile("Slow Net")).status == .ok)
        let shown = try JSONDecoder().decode(ProfileDocument.self, from: Data(await send(.GET, APIPath.profile("Slow Net")).body))
        #expect(shown.downlink.bandwidth == "32kbit")
        #expect(shown.readOnly == true)
    }

    @Test("Only root and the group may save or delete; a refusal writes nothing")
    func authorization() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let refused = try await save(Self.phone(), as: TestDaemon.bob)
        #expect(refused.status == .forbidden)
        #expect(try savedFiles().isEmpty)
        #expect(try await save(Self.phone(), as: TestDaemon.alice).status == .created)
        #expect(await send(.DELETE, APIPath.profile("My Phone 3G"), as: TestDaemon.bob).status == .forbidden)
        #expect(try savedFiles() == ["my-phone-3g.yaml"])
    }

    @Test("Names become file names of letters, digits and hyphens; a taken file name is numbered")
    func fileNames() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(ProfileFiles.stem(for: "My Phone 3G") == "my-phone-3g")
        #expect(ProfileFiles.stem(for: "<script>alert(1)</script>") == "script-alert-1-script")
        #expect(ProfileFiles.stem(for: "../../etc/passwd") == "etc-passwd")
        #expect(ProfileFiles.stem(for: "Ünïcode ±") == "n-code")
        #expect(ProfileFiles.stem(for: "±") == "profile")
        try "not: a profile\n".write(to: saved.appendingPathComponent("my-phone-3g.yaml"), atomically: true, encoding: .utf8)
        #expect(await send(.POST, APIPath.reload).status == .ok)
        let reply = try await save(Self.phone())
        #expect(reply.status == .created)
        #expect(try JSONDecoder().decode(ProfileDocument.self, from: Data(reply.body)).file == saved.appendingPathComponent("my-phone-3g-2.yaml").path)
        #expect(try await save("name: \"<script>alert(1)</script>\"\n").status == .created)
        #expect(try savedFiles() == ["my-phone-3g-2.yaml", "my-phone-3g.yaml", "script-alert-1-script.yaml"])
    }

    @Test("A daemon with no directory of its own refuses to save, saying why")
    func noDirectory() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let router = ControlRouter(
            conditioner: TestDaemon.conditioner(kernel: kernel, catalog: ProfileCatalog.load(from: [builtIn.path]), profileDirectories: [builtIn.path]),
            authorizer: TestDaemon.authorizer
        )
        let request = SaveProfileRequest(definition: ProfileDefinition(yaml: Self.phone(), source: "console"))
        let reply = await router.respond(to: ControlRequest(
            method: .POST, uri: APIPath.profiles, body: Array(try JSONEncoder().encode(request)), requester: TestDaemon.root))
        #expect(reply.status == .internalServerError)
        #expect(try error(reply).code == "profile-not-saved")
    }
}
