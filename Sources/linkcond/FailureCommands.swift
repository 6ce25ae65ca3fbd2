import ArgumentParser
import ControlAPI
import LinkCondClient

struct Reset: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reset a condition's TCP connections now, as when the system reclaims a socket or the network changes.",
        discussion: """
            Each of the condition's connections fails at once in the app (ECONNABORTED on its next \
            read or write) and its far end gets a reset; new connections work. With --to, the \
            connections with that peer; with --netns, --pid or a sandbox, every connection that \
            leaves that namespace; on an interface, those of its addresses; with --device, the \
            device's connections through this gateway (ECONNRESET at both ends). SSH and the other \
            management exemptions are never reset.
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Flag(help: "Reset them while another client holds a lease on the condition.") var force = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let answer = try await connection.request(hints: .resetting) { client throws(ControlClientError) in
            try await client.reset(force: force, condition: target.condition)
        }
        try await output.show(answer) { Format.reset($0) }
    }
}
