import Conditions
import IPAddressText

extension SocketSource {
    /// `--metrics-listen`: `127.0.0.1:9464` or `[::1]:9464`. Loopback only: the metrics name
    /// the conditions, and a scraper elsewhere reaches them through a proxy of its owner's choice.
    public static func metricsListener(parsing text: String) throws(DaemonError) -> SocketSource {
        func refuse(_ problem: String) -> DaemonError {
            DaemonError(code: .socket, message: "--metrics-listen '\(text)': \(problem); write it like 127.0.0.1:9464 or [::1]:9464")
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw refuse("an IPv6 address goes in brackets, followed by :PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw refuse("no port")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw refuse("the port must be a number from 1 to 65535")
        }
        guard let address = parseIPAddress(String(host)) else {
            throw refuse("'\(host)' is not an IP address")
        }
        guard isLoopbackAddress(address) else {
            throw refuse("\(host) is not a loopback address; the metrics are served on loopback only")
        }
        return .tcp(host: String(host), port: port)
    }
}
