@testable import Profiles
import Testing

@Suite("YAMLComposer")
struct YAMLComposerTests {
    /// A compact picture of a node: `{k: v}`, `[a, b]`, scalars bare, each with `@line`.
    func sketch(_ node: YAMLNode) -> String {
        switch node {
        case .scalar(let text, let line):
            return "\(text)@\(line)"
        case .mapping(let pairs, let line):
            return "{" + pairs.map { "\(sketch($0.key)): \(sketch($0.value))" }.joined(separator: ", ") + "}@\(line)"
        case .sequence(let items, let line):
            return "[" + items.map(sketch).joined(separator: ", ") + "]@\(line)"
        }
    }

    @Test("block and flow mappings keep their order and 1-based lines")
    func mappings() throws {
        let node = try #require(try YAMLComposer.compose("name: X\ndownlink:\n  delay: 5ms\nuplink: { loss: 1% }\n"))
        #expect(sketch(node) == "{name@1: X@1, downlink@2: {delay@3: 5ms@3}@3, uplink@4: {loss@4: 1%@4}@4}@1")
    }

    @Test("duplicate keys are kept for the reader to judge")
    func duplicates() throws {
        let node = try #require(try YAMLComposer.compose("a: 1\na: 2\n"))
        #expect(sketch(node) == "{a@1: 1@1, a@2: 2@2}@1")
    }

    @Test("scalars stay text, whatever YAML 1.1 would make of them")
    func scalarsAreText() throws {
        let node = try #require(try YAMLComposer.compose("- yes\n- 'no'\n- !!int 5\n- \"a\\tb\"\n- ~\n"))
        #expect(sketch(node) == "[yes@1, no@2, 5@3, a\tb@4, ~@5]@1")
    }

    @Test("aliases resolve to their anchored node")
    func aliases() throws {
        let node = try #require(try YAMLComposer.compose("base: &slow { delay: 100ms }\nother: *slow\n"))
        #expect(sketch(node) == "{base@1: {delay@1: 100ms@1}@1, other@2: {delay@1: 100ms@1}@1}@1")
    }

    @Test("empty text and text with only comments hold no document")
    func empty() throws {
        #expect(try YAMLComposer.compose("") == nil)
        #expect(try YAMLComposer.compose("# nothing here\n\n") == nil)
    }

    @Test("refuses what is not one well-formed document, naming the line", arguments: [
        ("a: [1, 2\nb: 3\n", 2, "did not find expected ',' or ']'"),
        ("a: *missing\n", 1, "found undefined alias"),
        ("a: 1\n---\nb: 2\n", 2, "holds one document"),
        ("a: b: c\n", 1, "mapping values are not allowed in this context"),
    ])
    func refuses(_ text: String, line: Int, problem: String) throws {
        let error = #expect(throws: YAMLSyntaxError.self) { try YAMLComposer.compose(text) }
        #expect(error?.line == line)
        #expect(error?.problem.contains(problem) == true, "problem: \(error?.problem ?? "")")
    }
}

@Suite("YAML from a hostile file")
struct HostileYAMLTests {
    @Test("Deep nesting is an error, not a stack overflow (found by the profile fuzzer)")
    func deepNesting() {
        for text in [String(repeating: "[", count: 100_000), String(repeating: "{a: ", count: 5_000), String(repeating: "- ", count: 5_000) + "x"] {
            #expect(throws: (any Error).self) { try ProfileParser.parse(yaml: "name: x\nuplink: " + text, file: "deep.yaml") }
        }
        #expect(throws: Never.self) { _ = try? YAMLComposer.compose(String(repeating: "[", count: 31) + String(repeating: "]", count: 31)) }
    }
}
