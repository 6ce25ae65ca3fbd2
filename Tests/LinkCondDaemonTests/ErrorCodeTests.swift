import ControlAPI
import Foundation
@testable import Conditions
@testable import ControlHTTP
@testable import LinkCondDaemon
import Testing

/// The error codes are declared once (`ErrorCode`), their statuses decided once
/// (`ErrorCode.httpStatus`, a switch the compiler holds to every code); these tests hold the
/// API's two descriptions to the same vocabulary.
@Suite("The error vocabulary")
struct ErrorCodeTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs").standardized

    @Test("openapi.yaml's ErrorCode lists exactly the codes the daemon can answer")
    func openAPIListsEveryCode() throws {
        let text = try String(contentsOf: Self.docs.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == "    ErrorCode:" })
        let enumLine = try #require(lines[start...].firstIndex { $0.trimmingCharacters(in: .whitespaces) == "enum:" })
        let listed = lines[(enumLine + 1)...]
            .prefix { $0.trimmingCharacters(in: .whitespaces).hasPrefix("- ") }
            .map { String($0.trimmingCharacters(in: .whitespaces).dropFirst(2)) }
        #expect(listed.count == Set(listed).count, "a code listed twice")
        #expect(Set(listed) == Set(ErrorCode.allCases.map(\.rawValue)))
    }

    @Test("api.md's table answers each code with the status the daemon does")
    func apiTableAgreesOnStatuses() throws {
        let text = try String(contentsOf: Self.docs.appendingPathComponent("api.md"), encoding: .utf8)
        var documented: [String: [Int]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, cells[0].count == 3, let status = Int(cells[0]) else { continue }
            for code in cells[1].split(separator: ",") {
                documented[code.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")), default: []].append(status)
            }
        }
        for code in ErrorCode.allCases {
            #expect(documented[code.rawValue] == [Int(code.httpStatus.code)], "\(code.rawValue)")
        }
        #expect(Set(documented.keys).subtracting(ErrorCode.allCases.map(\.rawValue)).isEmpty)
    }

    @Test("A reply's status and body come from its code")
    func replyFollowsTheCode() throws {
        let reply = ControlError(.leaseHeld, "held").reply
        #expect(reply.status == .conflict)
        let document = try JSONDecoder().decode(ErrorResponse.self, from: Data(reply.body))
        #expect(document.error.knownCode == .leaseHeld)
        #expect(ErrorResponse.Body(code: "from-a-newer-daemon", message: "").knownCode == nil)
    }
}
