import ControlAPI
import Foundation
import Testing

@Suite("ProfileProblem")
struct ProfileProblemTests {
    @Test("description reads file:line: field: message, leaving out line 0 and an empty field", arguments: [
        (3, "downlink.loss", "/etc/linkcond/profiles/x.yaml:3: downlink.loss: loss '120%' is out of range"),
        (0, "name", "/etc/linkcond/profiles/x.yaml: name: loss '120%' is out of range"),
        (12, "", "/etc/linkcond/profiles/x.yaml:12: loss '120%' is out of range"),
        (0, "", "/etc/linkcond/profiles/x.yaml: loss '120%' is out of range"),
    ] as [(Int, String, String)])
    func description(line: Int, field: String, expected: String) {
        let problem = ProfileProblem(code: "bad-value", file: "/etc/linkcond/profiles/x.yaml", line: line, field: field, message: "loss '120%' is out of range")
        #expect(problem.description == expected)
        #expect("\(problem)" == expected)
    }

    @Test("the code is not part of the description")
    func codeNotShown() {
        let problem = ProfileProblem(code: "syntax", file: "f.yaml", line: 1, field: "", message: "bad")
        #expect(!problem.description.contains("syntax"))
    }
}
