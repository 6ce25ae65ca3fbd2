import Foundation
import Profiles
import Testing

/// Profiles for scenarios to name; the files are gone once loaded.
private let testProfiles: ProfileCatalog = {
    do {
        return try loadCatalog(files: [
            "slow-net.yaml": profileYAML(name: "Slow Net"),
            "black-hole.yaml": profileYAML(name: "Black Hole"),
            "edge.yaml": profileYAML(name: "Edge"),
            "3g.yaml": profileYAML(name: "3G"),
        ])
    } catch {
        Issue.record(error)
        return ProfileCatalog()
    }
}()

/// A minimal valid scenario file.
private func scenarioYAML(name: String, profile: String = "Edge") -> String {
    "name: \(name)\nsteps:\n  - profile: \(profile)\n"
}

/// Loads scenarios from a temporary directory holding `files`; the directory is gone afterwards.
private func loadScenarios(files: [String: String], profiles: ProfileCatalog = testProfiles) throws -> ScenarioCatalog {
    try withTemporaryDirectory { root in
        let directory = try makeDirectory("scenarios", in: root, files: files)
        return ScenarioCatalog.load(from: [directory], profiles: profiles)
    }
}

@Suite("ScenarioCatalog loading")
struct ScenarioCatalogLoadingTests {
    @Test("good files load and each bad one is reported with file:line, without hiding the others")
    func goodAndBadFiles() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("scenarios", in: root, files: [
                "good-one.yaml": scenarioYAML(name: "Good One"),
                "good-two.yml": "name: Good Two\nsteps:\n  - downlink: { loss: 100% }\n    for: 3s..8s\n",
                "bad-duration.yaml": "name: Bad Duration\nsteps:\n  - profile: Edge\n    for: 5\n",
                "bad-syntax.yaml": "name: Bad Syntax\nsteps: [ { profile: Edge }\n",
                "not-yaml.txt": "this is not read",
                ".hidden.yaml": "name: Hidden\n",
                "zz-good-three.yaml": scenarioYAML(name: "Good Three", profile: "slow-net"),
            ])
            let catalog = ScenarioCatalog.load(from: [directory], profiles: testProfiles)

            #expect(Set(catalog.entries.map(\.scenario.name)) == ["Good One", "Good Two", "Good Three"])
            #expect(catalog.shadowed.isEmpty)
            try #require(catalog.problems.count == 2)
            let duration = try #require(catalog.problems.first { $0.file.hasSuffix("bad-duration.yaml") })
            #expect(duration.file == "\(directory)/bad-duration.yaml")
            #expect(duration.line == 4)
            #expect(duration.field == "steps[1].for")
            #expect(duration.code == .badValue)
            let syntax = try #require(catalog.problems.first { $0.file.hasSuffix("bad-syntax.yaml") })
            #expect(syntax.code == .syntax)

            let good = try catalog.entry(named: "Good Two")
            #expect(good.file == "\(directory)/good-two.yml")
            #expect(good.stem == "good-two")
        }
    }

    @Test("a step naming a profile that does not exist makes its file a problem, with suggestions")
    func unknownProfile() throws {
        let catalog = try loadScenarios(files: [
            "typo.yaml": "name: Typo\nsteps:\n  - profile: Edge\n    for: 1s\n  - profile: Slow Nte\n    for: 1s\n",
            "fine.yaml": scenarioYAML(name: "Fine"),
        ])
        #expect(catalog.entries.map(\.scenario.name) == ["Fine"])
        let problem = try #require(catalog.problems.first)
        #expect(catalog.problems.count == 1)
        #expect(problem.file.hasSuffix("/typo.yaml"))
        #expect(problem.line == 5)
        #expect(problem.field == "steps[2].profile")
        #expect(problem.code == .badValue)
        #expect(problem.message == "no profile named 'Slow Nte'; did you mean 'Slow Net'?")
        #expect(problem.description.hasSuffix("/typo.yaml:5: steps[2].profile: no profile named 'Slow Nte'; did you mean 'Slow Net'?"))
    }

    @Test("every unknown profile of a file is reported, each at its step")
    func everyUnknownProfile() throws {
        let catalog = try loadScenarios(files: [
            "two.yaml": "name: Two\nsteps:\n  - profile: Quantum Tunnel\n  - profile: Edge\n  - { profile: LTE }\n",
        ])
        #expect(catalog.entries.isEmpty)
        #expect(catalog.problems.map(\.field) == ["steps[1].profile", "steps[3].profile"])
        #expect(catalog.problems.map(\.line) == [3, 5])
        #expect(catalog.problems.map(\.message) == ["no profile named 'Quantum Tunnel'", "no profile named 'LTE'"])
    }

    @Test("profiles are found as the daemon finds them: display name or file stem, any case or spacing")
    func profileMatching() throws {
        let catalog = try loadScenarios(files: [
            "ok.yaml": "name: OK\nsteps:\n  - profile: slow-net\n  - profile: BLACK HOLE\n  - profile: 3g\n  - profile: blackhole\n",
        ])
        #expect(catalog.problems.isEmpty)
        #expect(catalog.entries.first?.scenario.namedProfiles == ["slow-net", "BLACK HOLE", "3g", "blackhole"])
    }

    @Test("inline steps need no profile catalog")
    func inlineOnly() throws {
        let catalog = try loadScenarios(
            files: ["inline.yaml": "name: Inline\nsteps:\n  - { downlink: { loss: 100% }, for: 1s }\n"],
            profiles: ProfileCatalog()
        )
        #expect(catalog.problems.isEmpty)
        #expect(catalog.entries.map(\.scenario.name) == ["Inline"])
    }

    @Test("an unreadable file is a problem of its own")
    func unreadable() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("scenarios", in: root, files: ["good.yaml": scenarioYAML(name: "Good")])
            try Data([0xFF, 0xFE, 0x00, 0x41]).write(to: URL(fileURLWithPath: "\(directory)/binary.yaml"))
            let catalog = ScenarioCatalog.load(from: [directory], profiles: testProfiles)
            #expect(catalog.entries.map(\.scenario.name) == ["Good"])
            let problem = try #require(catalog.problems.first)
            #expect(catalog.problems.count == 1)
            #expect(problem.code == .unreadable)
            #expect(problem.file == "\(directory)/binary.yaml")
        }
    }

    @Test("two files of one directory with the same name: the second is a problem")
    func sameDirectoryDuplicate() throws {
        let catalog = try loadScenarios(files: [
            "a.yaml": scenarioYAML(name: "Subway"),
            "b.yaml": scenarioYAML(name: "SUBWAY", profile: "3G"),
        ])
        #expect(catalog.entries.map(\.stem) == ["a"])
        let problem = try #require(catalog.problems.first)
        #expect(catalog.problems.count == 1)
        #expect(problem.code == .duplicateName)
        #expect(problem.field == "name")
        #expect(problem.file.hasSuffix("/b.yaml"))
        #expect(problem.message.contains("'SUBWAY' is already defined in "))
        #expect(problem.message.hasSuffix("/a.yaml"))
        #expect(catalog.shadowed.isEmpty)
    }

    @Test("an earlier directory's scenario shadows a later one of the same name")
    func shadowing() throws {
        try withTemporaryDirectory { root in
            let local = try makeDirectory("etc", in: root, files: ["z-subway.yaml": scenarioYAML(name: "Subway", profile: "3G")])
            let builtin = try makeDirectory("share", in: root, files: [
                "subway.yaml": scenarioYAML(name: "subway"),
                "elevator.yaml": scenarioYAML(name: "Elevator"),
            ])
            let catalog = ScenarioCatalog.load(from: [local, builtin], profiles: testProfiles)
            #expect(catalog.problems.isEmpty)
            #expect(catalog.entries.map(\.scenario.name) == ["Subway", "Elevator"])
            #expect(try catalog.entry(named: "subway").file == "\(local)/z-subway.yaml")
            #expect(try catalog.entry(named: "subway").scenario.namedProfiles == ["3G"])
            try #require(catalog.shadowed.count == 1)
            #expect(catalog.shadowed[0].file == "\(builtin)/subway.yaml")
            #expect(catalog.shadowed[0].by == "\(local)/z-subway.yaml")

            let backward = ScenarioCatalog.load(from: [builtin, local], profiles: testProfiles)
            #expect(try backward.entry(named: "subway").file == "\(builtin)/subway.yaml")
            #expect(backward.shadowed.map(\.file) == ["\(local)/z-subway.yaml"])
        }
    }

    @Test("a broken file in an earlier directory does not shadow a good one of the same name")
    func brokenDoesNotShadow() throws {
        try withTemporaryDirectory { root in
            let local = try makeDirectory("etc", in: root, files: ["subway.yaml": scenarioYAML(name: "Subway", profile: "Nowhere")])
            let builtin = try makeDirectory("share", in: root, files: ["subway.yaml": scenarioYAML(name: "Subway")])
            let catalog = ScenarioCatalog.load(from: [local, builtin], profiles: testProfiles)
            #expect(try catalog.entry(named: "Subway").file == "\(builtin)/subway.yaml")
            #expect(catalog.problems.map(\.file) == ["\(local)/subway.yaml"])
            #expect(catalog.shadowed.isEmpty)
        }
    }

    @Test("missing directories are skipped silently; none at all give an empty catalog")
    func missingDirectories() throws {
        try withTemporaryDirectory { root in
            let directory = try makeDirectory("scenarios", in: root, files: ["x.yaml": scenarioYAML(name: "X")])
            let missing = (root as NSString).appendingPathComponent("does-not-exist")
            let catalog = ScenarioCatalog.load(from: [missing, directory, missing], profiles: testProfiles)
            #expect(catalog.entries.map(\.scenario.name) == ["X"])
            #expect(catalog.problems.isEmpty)
        }
        let empty = ScenarioCatalog.load(from: [], profiles: testProfiles)
        #expect(empty.entries.isEmpty && empty.problems.isEmpty && empty.shadowed.isEmpty)
        #expect(ScenarioCatalog().entries.isEmpty)
    }
}

@Suite("ScenarioCatalog lookup")
struct ScenarioCatalogLookupTests {
    static let catalog: ScenarioCatalog = {
        do {
            return try loadScenarios(files: [
                "slow-net-then-black-hole.yaml": scenarioYAML(name: "Slow Net, then Black Hole"),
                "subway.yaml": scenarioYAML(name: "Subway"),
                "flaky-wifi.yaml": scenarioYAML(name: "Flaky Wi-Fi"),
                "lift.yaml": scenarioYAML(name: "Elevator"),
                "train-2.yaml": scenarioYAML(name: "Train 2"),
                "train-10.yaml": scenarioYAML(name: "Train 10"),
            ])
        } catch {
            Issue.record(error)
            return ScenarioCatalog()
        }
    }()

    @Test("finds a scenario by display name or file stem, ignoring case, spaces and punctuation", arguments: [
        ("Slow Net, then Black Hole", "Slow Net, then Black Hole"),
        ("slow net then black hole", "Slow Net, then Black Hole"),
        ("slow-net-then-black-hole", "Slow Net, then Black Hole"),
        ("SlowNetThenBlackHole", "Slow Net, then Black Hole"),
        ("subway", "Subway"),
        ("SUBWAY", "Subway"),
        ("Flaky Wi-Fi", "Flaky Wi-Fi"),
        ("flaky wifi", "Flaky Wi-Fi"),
        ("flaky-wifi", "Flaky Wi-Fi"),
        ("elevator", "Elevator"),
        ("lift", "Elevator"),
        ("train 2", "Train 2"),
    ])
    func finds(query: String, name: String) throws {
        #expect(try Self.catalog.entry(named: query).scenario.name == name)
    }

    @Test("an unknown name suggests the names that were probably meant", arguments: [
        ("subwya", ["Subway"]),
        ("flaky", ["Flaky Wi-Fi"]),
        ("elevatr", ["Elevator"]),
        ("train", ["Train 10", "Train 2"]),
        ("quantum tunnel", []),
        ("", []),
    ] as [(String, [String])])
    func suggestions(query: String, suggestions: [String]) throws {
        let error = try #require(throws: UnknownScenarioError.self) {
            try Self.catalog.entry(named: query)
        }
        #expect(error.query == query)
        #expect(error.suggestions == suggestions)
    }

    @Test("the error explains itself", arguments: [
        ("subwya", "no scenario named 'subwya'; did you mean 'Subway'?"),
        ("train", "no scenario named 'train'; did you mean 'Train 10' or 'Train 2'?"),
        ("quantum tunnel", "no scenario named 'quantum tunnel'"),
    ])
    func errorDescription(query: String, text: String) throws {
        let error = try #require(throws: UnknownScenarioError.self) {
            try Self.catalog.entry(named: query)
        }
        #expect(error.description == text)
    }

    @Test("sortedEntries orders names as people do: case-insensitive, numbers by value")
    func sortedEntries() {
        #expect(Self.catalog.sortedEntries.map(\.scenario.name) == [
            "Elevator", "Flaky Wi-Fi", "Slow Net, then Black Hole", "Subway", "Train 2", "Train 10",
        ])
    }
}
