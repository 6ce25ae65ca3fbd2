import Foundation
import Profiles
import Testing

@Suite("ProfileCatalog loading")
struct ProfileCatalogLoadingTests {
    @Test("good files load and each bad one is reported with file:line, without hiding the others")
    func goodAndBadFiles() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("profiles", in: root, files: [
                "good-one.yaml": "name: Good One\ndownlink: { bandwidth: 1Mbit }\n",
                "good-two.yml": "name: Good Two\nuplink: { delay: 5ms }\n",
                "bad-loss.yaml": "name: Bad Loss\ndownlink:\n  loss: 120%\n",
                "bad-syntax.yaml": "name: Bad Syntax\ndownlink: { bandwidth: 32kbit\n",
                "zz-good-three.yaml": "name: Good Three\n",
            ])
            let catalog = ProfileCatalog.load(from: [directory])

            #expect(Set(catalog.entries.map(\.profile.name)) == ["Good One", "Good Two", "Good Three"])
            #expect(catalog.shadowed.isEmpty)
            try #require(catalog.problems.count == 2)

            let loss = try #require(catalog.problems.first { $0.file.hasSuffix("bad-loss.yaml") })
            #expect(loss.file == "\(directory)/bad-loss.yaml")
            #expect(loss.code == .badValue)
            #expect(loss.line == 3)
            #expect(loss.field == "downlink.loss")
            #expect(loss.description.hasPrefix("\(directory)/bad-loss.yaml:3: downlink.loss: "))

            let syntax = try #require(catalog.problems.first { $0.file.hasSuffix("bad-syntax.yaml") })
            #expect(syntax.file == "\(directory)/bad-syntax.yaml")
            #expect(syntax.code == .syntax)
            #expect(syntax.line == 3)
        }
    }

    @Test("entries remember their file and its stem")
    func fileAndStem() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("profiles", in: root, files: [
                "slow-net.yaml": "name: Slow Net\n",
                "edge.yml": "name: Edge\n",
            ])
            let catalog = ProfileCatalog.load(from: [directory])
            let slow = try #require(catalog.entries.first { $0.profile.name == "Slow Net" })
            #expect(slow.file == "\(directory)/slow-net.yaml")
            #expect(slow.stem == "slow-net")
            let edge = try #require(catalog.entries.first { $0.profile.name == "Edge" })
            #expect(edge.stem == "edge")
        }
    }

    @Test("files are read in name order within a directory")
    func nameOrder() throws {
        let catalog = try loadCatalog(files: [
            "c.yaml": "name: C\n", "a.yaml": "name: A\n", "b.yml": "name: B\n",
        ])
        #expect(catalog.entries.map(\.profile.name) == ["A", "B", "C"])
    }

    @Test("hidden files and files that are not YAML are ignored, even when broken")
    func ignoredFiles() throws {
        let catalog = try loadCatalog(files: [
            "real.yaml": "name: Real\n",
            ".hidden.yaml": "name: [broken\n",
            ".also-hidden.yml": "name: Hidden\n",
            "README.md": "name: Readme\n",
            "notes.txt": "not yaml at all: [\n",
            "backup.yaml.bak": "name: Backup\n",
            "profile.json": "{\"name\": \"Json\"}\n",
            "yaml": "name: No Extension\n",
        ])
        #expect(catalog.entries.map(\.profile.name) == ["Real"])
        #expect(catalog.problems.isEmpty)
    }

    @Test("a file that is not UTF-8 is reported as unreadable")
    func unreadableFile() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("profiles", in: root, files: ["ok.yaml": "name: OK\n"])
            let latin1 = (directory as NSString).appendingPathComponent("latin1.yaml")
            try Data([0x6E, 0x61, 0x6D, 0x65, 0x3A, 0x20, 0xE9, 0xFF, 0x0A]).write(to: URL(fileURLWithPath: latin1))

            let catalog = ProfileCatalog.load(from: [directory])
            #expect(catalog.entries.map(\.profile.name) == ["OK"])
            let problem = try #require(catalog.problems.first)
            #expect(catalog.problems.count == 1)
            #expect(problem.code == .unreadable)
            #expect(problem.file == latin1)
            #expect(problem.line == 0)
            #expect(problem.field == "")
            #expect(problem.description.hasPrefix("\(latin1): cannot read"))
        }
    }

    @Test("two files in one directory with the same name: the first is kept, the second is a duplicate-name problem")
    func duplicateNameInOneDirectory() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("profiles", in: root, files: [
                "a.yaml": "name: Slow Net\ndownlink: { bandwidth: 32kbit }\n",
                "b.yaml": "name: slow-net\ndownlink: { bandwidth: 64kbit }\n",
            ])
            let catalog = ProfileCatalog.load(from: [directory])
            let entry = try #require(catalog.entries.first)
            #expect(catalog.entries.count == 1)
            #expect(entry.file == "\(directory)/a.yaml")
            #expect(entry.profile.downlink.bandwidth == .kbit(32))

            let problem = try #require(catalog.problems.first)
            #expect(catalog.problems.count == 1)
            #expect(problem.code == .duplicateName)
            #expect(problem.file == "\(directory)/b.yaml")
            #expect(problem.field == "name")
            #expect(problem.message.contains("\(directory)/a.yaml"))
            #expect(catalog.shadowed.isEmpty)
        }
    }

    @Test("the same name in an earlier and a later directory: the earlier wins, the later is shadowed")
    func shadowing() throws {
        try withTemporaryDirectory { root in
            // The later directory's file sorts first by name; directory order must still decide.
            let local = try makeDirectory("etc", in: root, files: ["z-slow.yaml": "name: Slow Net\ndownlink: { bandwidth: 1Mbit }\n"])
            let builtin = try makeDirectory("share", in: root, files: [
                "a-slow-net.yaml": "name: SLOW NET\ndownlink: { bandwidth: 32kbit }\n",
                "edge.yaml": "name: Edge\n",
            ])
            let catalog = ProfileCatalog.load(from: [local, builtin])

            #expect(catalog.problems.isEmpty)
            #expect(catalog.entries.map(\.profile.name) == ["Slow Net", "Edge"])
            let slow = try #require(catalog.entries.first)
            #expect(slow.file == "\(local)/z-slow.yaml")
            #expect(slow.profile.downlink.bandwidth == .mbit(1))
            try #require(catalog.shadowed.count == 1)
            #expect(catalog.shadowed[0].file == "\(builtin)/a-slow-net.yaml")
            #expect(catalog.shadowed[0].by == "\(local)/z-slow.yaml")
        }
    }

    @Test("swapping the directory order swaps the winner")
    func shadowingFollowsDirectoryOrder() throws {
        try withTemporaryDirectory { root in
            let first = try makeDirectory("first", in: root, files: ["x.yaml": "name: X\ndownlink: { delay: 1ms }\n"])
            let second = try makeDirectory("second", in: root, files: ["x.yaml": "name: X\ndownlink: { delay: 2ms }\n"])
            let forward = ProfileCatalog.load(from: [first, second])
            let backward = ProfileCatalog.load(from: [second, first])
            #expect(forward.entries.map(\.profile.downlink.delay) == [.milliseconds(1)])
            #expect(backward.entries.map(\.profile.downlink.delay) == [.milliseconds(2)])
            #expect(backward.shadowed.map(\.file) == ["\(first)/x.yaml"])
        }
    }

    @Test("a missing directory is skipped silently")
    func missingDirectory() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("profiles", in: root, files: ["edge.yaml": "name: Edge\n"])
            let missing = (root as NSString).appendingPathComponent("does-not-exist")
            let catalog = ProfileCatalog.load(from: [missing, directory, missing])
            #expect(catalog.entries.map(\.profile.name) == ["Edge"])
            #expect(catalog.problems.isEmpty)
            #expect(catalog.shadowed.isEmpty)
        }
    }

    @Test("no directories, or only missing ones, give an empty catalog")
    func emptyCatalog() {
        #expect(ProfileCatalog.load(from: []).entries.isEmpty)
        let missing = ProfileCatalog.load(from: ["/nonexistent/linkcond-\(UUID().uuidString)"])
        #expect(missing.entries.isEmpty)
        #expect(missing.problems.isEmpty)
    }
}

@Suite("ProfileCatalog lookup")
struct ProfileCatalogLookupTests {
    /// Profiles with names that are easy to confuse; the files are gone once loaded.
    static let catalog: ProfileCatalog = {
        do {
            return try loadCatalog(files: [
                "slow-net.yaml": profileYAML(name: "Slow Net"),
                "nasty-net.yaml": profileYAML(name: "Nasty Net"),
                "wifi.yaml": profileYAML(name: "WiFi"),
                "wifi-802.11ac.yaml": profileYAML(name: "WiFi 802.11ac"),
                "100-percent-loss.yaml": profileYAML(name: "100% Loss"),
                "3g.yaml": profileYAML(name: "3G"),
                "hole.yaml": profileYAML(name: "Black Hole"),
            ])
        } catch {
            Issue.record(error)
            return ProfileCatalog()
        }
    }()

    @Test("finds a profile by display name or file stem, ignoring case, spaces and punctuation", arguments: [
        ("Slow Net", "Slow Net"),
        ("slow net", "Slow Net"),
        ("SLOW-NET", "Slow Net"),
        ("slow-net", "Slow Net"),
        ("  slow   net  ", "Slow Net"),
        ("slow_net", "Slow Net"),
        ("Slow.Net!", "Slow Net"),
        ("100% Loss", "100% Loss"),
        ("100% loss", "100% Loss"),
        ("100-percent-loss", "100% Loss"),
        ("3g", "3G"),
        ("black hole", "Black Hole"),
        ("hole", "Black Hole"),
        ("HOLE", "Black Hole"),
    ])
    func finds(query: String, name: String) throws {
        #expect(try Self.catalog.entry(named: query).profile.name == name)
    }

    @Test("an exact match wins over a longer name that starts the same", arguments: [
        ("wifi", "WiFi"),
        ("WiFi", "WiFi"),
        ("WIFI", "WiFi"),
        ("wifi 802.11ac", "WiFi 802.11ac"),
        ("WiFi 802.11AC", "WiFi 802.11ac"),
        ("wifi-802.11ac", "WiFi 802.11ac"),
    ])
    func exactMatchWins(query: String, name: String) throws {
        #expect(try Self.catalog.entry(named: query).profile.name == name)
    }

    @Test("a display name wins over another profile's file stem")
    func displayNameBeatsStem() throws {
        let catalog = try loadCatalog(files: [
            "edge.yaml": "name: Fast\n",
            "other.yaml": "name: Edge\n",
        ])
        #expect(try catalog.entry(named: "edge").file.hasSuffix("/other.yaml"))
        #expect(try catalog.entry(named: "fast").file.hasSuffix("/edge.yaml"))
    }

    @Test("an unknown name suggests the names that were probably meant", arguments: [
        ("slow nte", ["Slow Net"]),
        ("Slwo Net", ["Slow Net"]),
        ("slow", ["Slow Net"]),
        ("wif", ["WiFi", "WiFi 802.11ac"]),
        ("wifi 802", ["WiFi", "WiFi 802.11ac"]),
        ("nasty", ["Nasty Net"]),
        ("black-holes", ["Black Hole"]),
        ("quantum tunnel", []),
        ("", []),
        ("   ", []),
    ] as [(String, [String])])
    func suggestions(query: String, suggestions: [String]) throws {
        let error = try #require(throws: UnknownProfileError.self) {
            try Self.catalog.entry(named: query)
        }
        #expect(error.query == query)
        #expect(error.suggestions == suggestions)
    }

    @Test("suggestions are at most three, best first")
    func suggestionLimit() throws {
        let error = try #require(throws: UnknownProfileError.self) {
            try Self.catalog.entry(named: "net")
        }
        #expect(error.suggestions == ["Nasty Net", "Slow Net"])
        // A letter is in many names and near many more: nothing is close, so nothing is said.
        let vague = try #require(throws: UnknownProfileError.self) {
            try Self.catalog.entry(named: "e")
        }
        #expect(vague.suggestions.isEmpty)
        let typo = try #require(throws: UnknownProfileError.self) {
            try Self.catalog.entry(named: "slwo net")
        }
        #expect(typo.suggestions == ["Slow Net"])
        #expect(try Self.catalog.entry(named: "slownet").profile.name == "Slow Net", "spaces and punctuation are ignored")
    }

    @Test("the error explains itself", arguments: [
        ("slow nte", "no profile named 'slow nte'; did you mean 'Slow Net'?"),
        ("wif", "no profile named 'wif'; did you mean 'WiFi' or 'WiFi 802.11ac'?"),
        ("quantum tunnel", "no profile named 'quantum tunnel'"),
    ])
    func errorDescription(query: String, text: String) throws {
        let error = try #require(throws: UnknownProfileError.self) {
            try Self.catalog.entry(named: query)
        }
        #expect(error.description == text)
    }

    @Test("sortedEntries orders names as people do: case-insensitive, numbers by value")
    func sortedEntries() throws {
        let catalog = try loadCatalog(files: [
            "a.yaml": "name: WiFi 802.11ac\n",
            "b.yaml": "name: 100% Loss\n",
            "c.yaml": "name: aardvark\n",
            "d.yaml": "name: WiFi\n",
            "e.yaml": "name: Black Hole\n",
            "f.yaml": "name: 3G\n",
            "g.yaml": "name: Edge\n",
        ])
        #expect(catalog.sortedEntries.map(\.profile.name) == [
            "3G", "100% Loss", "aardvark", "Black Hole", "Edge", "WiFi", "WiFi 802.11ac",
        ])
    }

    @Test("names without letters or digits are refused, each in its own file")
    func symbolOnlyNames() throws {
        // Names are matched by their letters and digits; one without any could not be told apart.
        let catalog = try loadCatalog(files: ["turtle.yaml": "name: 🐢\n", "rabbit.yaml": "name: 🐇\n", "ok.yaml": "name: OK\n"])
        #expect(catalog.entries.map(\.profile.name) == ["OK"])
        #expect(catalog.problems.count == 2)
        #expect(catalog.problems.allSatisfy { $0.field == "name" && $0.code == .badValue && $0.line == 1 })
        #expect(throws: UnknownProfileError.self) { try catalog.entry(named: "???") }
    }
}
