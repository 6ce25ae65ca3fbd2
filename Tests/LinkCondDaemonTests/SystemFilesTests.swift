import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import HostFacts
import Testing

@Suite("Reading the system")
struct SystemFilesTests {
    @Test("The default route's interface comes from /proc/net/route, lowest metric first")
    func ipv4DefaultRoute() {
        let table = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            wlan0\t00000000\t0102A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
            eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
            eth0\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
            """
        #expect(DefaultRoute.interface(inIPv4RouteTable: table) == "eth0")
        #expect(DefaultRoute.interface(inIPv4RouteTable: "Iface\tDestination\n") == nil)
    }

    @Test("Without an IPv4 default route, the IPv6 one is used; lo never is")
    func ipv6DefaultRoute() {
        let table = """
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth1
            fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
            """
        #expect(DefaultRoute.interface(inIPv6RouteTable: table) == "eth1")
    }

    @Test("An interface's addresses with their prefixes: loopback's 127.0.0.1/8; none for an interface that is not there")
    func interfaceAddresses() {
        #expect(InterfaceAddress.of("lo").contains(InterfaceAddress(bytes: [127, 0, 0, 1], prefixLength: 8)))
        #expect(InterfaceAddress.of("lc-not-there").isEmpty)
        #expect(InterfaceAddress(bytes: [0xFE, 0x80] + Array(repeating: 0, count: 14), prefixLength: 64).isLinkLocal)
        #expect(!InterfaceAddress(bytes: [0xFD, 0x80] + Array(repeating: 0, count: 14), prefixLength: 64).isLinkLocal)
    }

    @Test("CAP_NET_ADMIN is bit 12 of the effective set")
    func capabilities() {
        #expect(Capabilities.hasNetAdmin(inProcessStatus: "Name:\tx\nCapEff:\t000001ffffffffff\n") == true)
        #expect(Capabilities.hasNetAdmin(inProcessStatus: "CapEff:\t0000000000000000\n") == false)
        #expect(Capabilities.hasNetAdmin(inProcessStatus: "CapEff:\t0000000000001000\n") == true)
        #expect(Capabilities.hasNetAdmin(inProcessStatus: "Name:\tx\n") == nil)
    }
}

@Suite("The history file")
struct HistoryFileTests {
    @Test("A long-running daemon keeps the history file bounded, and a restart reads it back")
    func boundedWhileRunning() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("history.jsonl")
        var history = ConditionHistory(file: file)
        for index in 0...ConditionHistory.fileLimit {
            history.record(HistoryRecord(time: "t\(index)", from: "off", to: "Slow Net", reason: "activate", requester: nil, detail: nil))
        }
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count <= ConditionHistory.fileLimit)
        #expect(history.recent(1).first?.time == "t\(ConditionHistory.fileLimit)")
        let reopened = ConditionHistory(file: file)
        #expect(reopened.recent(ConditionHistory.kept).map(\.time) == history.recent(ConditionHistory.kept).map(\.time))
    }

    @Test("A history file the daemon wrote when its lines were the API's documents reads without loss")
    func readsLinesWrittenAsDocuments() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("history.jsonl")
        let written = [
            HistoryEntryDocument(
                time: "2026-11-27T09:00:00Z", condition: "eth0@10.0.0.5:443", from: "off", to: "Slow Net", reason: "lease",
                requester: Holder(uid: 1000, user: "alice", pid: 4242, command: "pytest -k offline"), detail: "lease 30s"
            ),
            HistoryEntryDocument(time: "2026-11-27T09:00:30Z", from: "Slow Net", to: "off", reason: "lease-expired", requester: nil, detail: nil),
        ]
        let encoder = JSONEncoder()
        let text = try written.map { String(decoding: try encoder.encode($0), as: UTF8.self) + "\n" }.joined()
        try Data(text.utf8).write(to: file)
        let read = ConditionHistory(file: file).recent(10)
        #expect(read.map(HistoryEntryDocument.init) == written)
    }
}

extension HistoryFileTests {
    @Test("A history file past the read limit: only its end is read, from the first whole line, and the file is cut back")
    func hugeFileReadFromItsEnd() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("history.jsonl")
        let line = #"{"time":"old","from":"off","to":"Slow Net","reason":"activate","detail":""# + String(repeating: "x", count: 1000) + "\"}\n"
        var text = String(repeating: line, count: ConditionHistory.readLimit / line.utf8.count + 10)
        text += #"{"time":"last","from":"Slow Net","to":"off","reason":"off"}"# + "\n"
        try Data(text.utf8).write(to: file)

        let history = ConditionHistory(file: file)
        #expect(history.recent(1).map(\.time) == ["last"])
        #expect(history.recent(ConditionHistory.kept).count == ConditionHistory.kept)
        let size = try #require(FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
        #expect(size < ConditionHistory.readLimit / 10, "cut back to the records kept")
    }

    @Test("The tail of a file cut inside a line leaves that line out; damaged lines are skipped, the rest kept")
    func tailAndDamagedLines() {
        let bytes = Array(#"reason":"activate"}"#.utf8) + [10] + Array(#"{"time":"a","from":"off","to":"x","reason":"r"}"#.utf8) + [10]
            + Array("not json\n{}\n".utf8) + Array(#"{"time":"b","from":"x","to":"off","reason":"r"}"#.utf8)
        #expect(ConditionHistory.parse(bytes, fromMiddle: true).records.map(\.time) == ["a", "b"])
        #expect(ConditionHistory.parse(bytes, fromMiddle: true).lines == 4)
        #expect(ConditionHistory.parse(bytes, fromMiddle: false).lines == 5)
    }

    @Test("A history file that is a FIFO is not read (opening it would wait for a writer); the daemon starts with none")
    func fifoIsNotRead() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("history.jsonl")
        #expect(mkfifo(file.path, 0o600) == 0)
        #expect(ConditionHistory(file: file).recent(10).isEmpty)
    }
}

@Suite("Command lines without their secrets")
struct RedactionTests {
    @Test("Secrets in options, variables and URLs are masked; the rest stays", arguments: [
        (["curl", "--token", "abc", "-o", "x"], "curl --token *** -o x"),
        (["tool", "--password=hunter2", "--port=22"], "tool --password=*** --port=22"),
        (["env", "API_KEY=s3cret", "HOME=/root", "pytest"], "env API_KEY=*** HOME=/root pytest"),
        (["git", "clone", "https://alice:pw@example.com/r.git"], "git clone https://alice:***@example.com/r.git"),
        (["ssh", "-p", "2222", "host"], "ssh -p 2222 host"),
        (["npm", "test", "--", "--grep", "offline"], "npm test -- --grep offline"),
    ])
    func masks(words: [String], expected: String) {
        let data = Data(words.joined(separator: "\0").utf8)
        #expect(Requester.commandLine(fromProcCmdline: data) == expected)
    }

    @Test("Users outside the group see the program, not its arguments")
    func publicView() {
        let holder = Holder(uid: 1000, user: "alice", pid: 42, command: "/usr/bin/pytest -k offline --token ***")
        #expect(holder.withoutArguments.command == "pytest")
        #expect(holder.withoutArguments.uid == 1000)
    }
}

@Suite("Where profiles come from")
struct ProfileDirectoryTests {
    @Test("Given directories, then the built-ins; the default only without --profiles")
    func searchPath() throws {
        let directory = try TestDaemon.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/linkcondd").standardized.path
        let builtIn = try #require(ProfileDirectories.builtIn(executablePath: executable))
        #expect(try ProfileDirectories.searchPath(given: [directory.path], builtIn: true, executablePath: executable) == [directory.path, builtIn])
        #expect(try ProfileDirectories.searchPath(given: [directory.path], builtIn: false, executablePath: executable) == [directory.path])
        #expect(try ProfileDirectories.searchPath(given: [], builtIn: true, executablePath: executable) == ["/etc/linkcond/profiles", builtIn])
    }

    @Test("A --profiles directory that does not exist stops the daemon, saying why")
    func missing() {
        let error = #expect(throws: DaemonError.self) {
            try ProfileDirectories.searchPath(given: ["/nonexistent/profiles"], builtIn: true)
        }
        #expect(error?.message.contains("/nonexistent/profiles") == true)
        #expect(error?.code == .profiles)
    }
}
