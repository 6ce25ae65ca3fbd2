import ControlAPI
import LinkCondClient

/// What to type next, by error code: the daemon says what is wrong, in words any client can
/// show; how to get past it on the command line is the command's to say.
struct CommandHints: ExpressibleByDictionaryLiteral {
    private var hints: [ErrorCode: String]

    init(dictionaryLiteral elements: (ErrorCode, String)...) {
        hints = Dictionary(elements, uniquingKeysWith: { first, _ in first })
    }

    /// `message` with the hint for `error`'s code, when there is one.
    func appended(to message: String, for error: ControlClientError) -> String {
        guard let code = error.apiError?.knownCode, let hint = hints[code] else { return message }
        return "\(message); \(hint)"
    }

    /// Commands that set a condition: `--force` takes a lease over.
    static let settingACondition: CommandHints = [
        .leaseHeld: "--force takes it over ('linkcond release' ends a lease of your own)",
    ]

    /// `linkcond off`: `--force` ends another's lease.
    static let switchingOff: CommandHints = [
        .leaseHeld: "--force ends it",
    ]

    /// `linkcond release`: a condition without a lease is switched off instead.
    static let releasing: CommandHints = [
        .noLease: "'linkcond off --force' ends another's lease, 'linkcond off' a condition set without --for",
    ]

    /// `linkcond reset`: `--force` resets the connections under another's lease.
    static let resetting: CommandHints = [
        .leaseHeld: "--force resets them anyway",
        .resetUnavailable: "'linkcond doctor' says what this kernel can do",
    ]
}
