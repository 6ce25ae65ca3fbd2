/// Text a client sent, safe to put in a message or a log line: control characters escaped, and
/// cut to a readable length (`limit` Unicode scalars, then `...`). The daemon's errors and the
/// console's both quote requests so.
public func printableText(_ text: String, limit: Int) -> String {
    var shown = ""
    for scalar in text.unicodeScalars.prefix(limit) {
        shown += scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
    }
    return text.unicodeScalars.count > limit ? shown + "..." : shown
}
