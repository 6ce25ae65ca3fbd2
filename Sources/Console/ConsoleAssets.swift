/// The page, its script and its style, built into the binary (SwiftPM's `embedInCode`): the
/// console works with no internet and no files beside it, and loads nothing from elsewhere.
enum ConsoleAssets {
    struct Asset {
        var contentType: String
        var bytes: [UInt8]
    }

    static func asset(at path: String) -> Asset? {
        switch path {
        case "/", "/index.html": Asset(contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html)
        case "/console.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.console_js)
        case "/console.css": Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css)
        case "/icon.svg": Asset(contentType: "image/svg+xml", bytes: PackageResources.icon_svg)
        default: nil
        }
    }

    /// Only the console's own script, style and icon; no inline script or style, no frames, no
    /// form posted elsewhere.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}
