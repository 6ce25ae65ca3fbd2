import ArgumentParser

/// `--json`, and the one way a command prints the daemon's answer: the document as JSON, or the
/// command's text for it.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print the daemon's JSON answer.") var json = false

    /// Prints DOCUMENT as JSON with `--json`, else the text TEXT makes of it (which may ask the
    /// daemon for more: it runs only without `--json`).
    func show<Document: Encodable>(_ document: Document, as text: (Document) async throws -> String) async throws {
        if json {
            try printJSON(document)
        } else {
            print(try await text(document))
        }
    }
}
