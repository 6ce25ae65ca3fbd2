import ControlAPI
import LinkCondClient
@testable import linkcond
import Testing

@Suite("What a command adds to the daemon's error")
struct CommandHintsTests {
    static func refusal(_ code: String) -> ControlClientError {
        ControlClientError(code: .api, message: "'Slow Net' is held by uid 1000 (alice)", status: 409,
                           apiError: ErrorResponse.Body(code: code, message: "'Slow Net' is held by uid 1000 (alice)"))
    }

    @Test("A command that sets a condition tells how to take a lease over; off, how to end it")
    func leaseHints() {
        #expect(CommandHints.settingACondition.appended(to: "held", for: Self.refusal("lease-held"))
            == "held; --force takes it over ('linkcond release' ends a lease of your own)")
        #expect(CommandHints.switchingOff.appended(to: "held", for: Self.refusal("lease-held")) == "held; --force ends it")
        #expect(CommandHints.releasing.appended(to: "none", for: Self.refusal("no-lease")).contains("'linkcond off'"))
    }

    @Test("No hint for another code, one a newer daemon added, or a failure without an answer")
    func noHint() {
        #expect(CommandHints.settingACondition.appended(to: "m", for: Self.refusal("unknown-profile")) == "m")
        #expect(CommandHints.settingACondition.appended(to: "m", for: Self.refusal("lease-held-elsewhere")) == "m")
        #expect(CommandHints.settingACondition.appended(to: "m", for: ControlClientError(code: .api, message: "m")) == "m")
    }
}
