/// The control API's routes. Versioned, so a future `/v2` can change shapes without breaking scripts.
public enum APIPath {
    public static let profiles = "/v1/profiles"
    public static let scenarios = "/v1/scenarios"
    /// `POST`: the default condition's scenario moves on to its next step.
    public static let conditionNext = "/v1/condition/next"
    public static let status = "/v1/status"
    /// The default condition: the daemon's own interface.
    public static let condition = "/v1/condition"
    /// Every condition: `GET` lists them, `DELETE` switches them all off.
    public static let conditions = "/v1/conditions"
    public static let leases = "/v1/leases"
    /// The current lease: `DELETE` ends it early when the caller holds it.
    public static let lease = "/v1/lease"
    public static let reload = "/v1/reload"
    public static let history = "/v1/history"
    /// Every condition's counters, read from the kernel.
    public static let stats = "/v1/stats"
    /// The conditions and their counters for Prometheus: outside `/v1`, where scrapers look.
    public static let metrics = "/metrics"
    /// Test hook, served only by a daemon started with `--enable-fault-injection`.
    public static let faultInjection = "/v1/debug/fault"

    /// `/v1/profiles/{name}` with the name percent-encoded, so `Slow Net` and `100% Loss` survive.
    public static func profile(_ name: String) -> String {
        profiles + "/" + percentEncode(name)
    }

    /// `/v1/conditions/{id}`: one condition (`GET`, `PUT`, `DELETE`); the id is the interface's name.
    public static func condition(_ id: String) -> String {
        conditions + "/" + percentEncode(id)
    }

    /// `/v1/conditions/{id}/lease`: `DELETE` ends the caller's lease on that condition early.
    public static func conditionLease(_ id: String) -> String {
        condition(id) + "/lease"
    }

    /// `/v1/conditions/{id}/next`: `POST` moves that condition's scenario on to its next step.
    public static func conditionNext(_ id: String) -> String {
        condition(id) + "/next"
    }

    /// Everything but unreserved characters (RFC 3986) is percent-encoded.
    public static func percentEncode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return encoded
    }

    /// Decodes `%XX` escapes (and, in a query, `+` as a space); `nil` when an escape is
    /// malformed or the result is not UTF-8.
    public static func percentDecode(_ text: Substring, plusAsSpace: Bool = false) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex else { return nil }
                let low = utf8.index(after: high)
                guard low < utf8.endIndex, let highValue = hexValue(utf8[high]), let lowValue = hexValue(utf8[low]) else {
                    return nil
                }
                bytes.append(highValue << 4 | lowValue)
                index = utf8.index(after: low)
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
                index = utf8.index(after: index)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
