/// A direction's `trace:`: a file in mahimahi's format that gives the direction's capacity
/// millisecond by millisecond, instead of a fixed `bandwidth`.
extension ProfileParser {
    /// The trace `section`'s field `field` names, read as `access` allows; `nil` when absent. A
    /// trace that cannot be read or is not valid is a problem of the profile's, on the field's
    /// line: `lte.yaml:4: downlink.trace: /etc/linkcond/profiles/lte.down:17: …`.
    static func trace(_ field: String, of section: YAMLSection, access: TraceFileAccess) throws(ProfileError) -> LinkTrace? {
        guard let node = section.fields[field] else { return nil }
        func refusal(_ message: String) -> ProfileError {
            ProfileError(code: .badValue, file: section.file, line: node.line, field: section.dotted(field), message: message)
        }
        let written = try section.scalar(node, field: field).trimmingSpaces()
        guard !written.isEmpty else {
            throw refusal("must name a trace file, e.g. trace: traces/subway.down (relative to this file's directory)")
        }
        switch access {
        case .refused:
            throw refusal(
                "only a profile or scenario file in a profile or scenario directory can name a trace; "
                    + "one given as text has no directory to find '\(written)' in, and cannot make the daemon read files"
            )
        case .besideFile:
            do {
                return try LinkTrace(contentsOfFile: tracePath(written, besides: section.file))
            } catch {
                throw refusal(error.description)
            }
        }
    }

    /// `written` as is when absolute, else in the directory of `file` (the profile or scenario
    /// file naming it). Joined as text, without resolving `..` or links: what the message then
    /// shows is what was read.
    static func tracePath(_ written: String, besides file: String) -> String {
        guard !written.hasPrefix("/") else { return written }
        guard let slash = file.lastIndex(of: "/") else { return written }
        return String(file[...slash]) + written
    }
}
