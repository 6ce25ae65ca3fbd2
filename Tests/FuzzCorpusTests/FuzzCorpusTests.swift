import Foundation
import LinkCondFuzzTargets
import Testing

@Suite("The fuzzers' seed corpora replay without a trap")
struct FuzzCorpusTests {
    @Test("Every seed of every target", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: target.corpus)
        #expect(files.count >= 10, "a corpus worth the name")
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: target.corpus + "/" + file))
            target.run(Array(data))
        }
    }
}
