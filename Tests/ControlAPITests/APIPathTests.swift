import ControlAPI
import Testing

@Suite("APIPath")
struct APIPathTests {
    @Test("routes are versioned")
    func routes() {
        #expect(APIPath.profiles == "/v1/profiles")
        #expect(APIPath.status == "/v1/status")
        #expect(APIPath.condition == "/v1/condition")
    }

    @Test("a profile's path percent-encodes its name", arguments: [
        ("Slow Net", "/v1/profiles/Slow%20Net"),
        ("100% Loss", "/v1/profiles/100%25%20Loss"),
        ("slow-net", "/v1/profiles/slow-net"),
        ("../status", "/v1/profiles/..%2Fstatus"),
    ])
    func profilePath(name: String, path: String) {
        #expect(APIPath.profile(name) == path)
    }

    @Test("everything but unreserved characters is percent-encoded", arguments: [
        ("Slow Net", "Slow%20Net"),
        ("100% Loss", "100%25%20Loss"),
        ("WiFi 802.11ac", "WiFi%20802.11ac"),
        ("Café", "Caf%C3%A9"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("🐢", "%F0%9F%90%A2"),
        ("a/b?c#d", "a%2Fb%3Fc%23d"),
        ("a+b&c=d", "a%2Bb%26c%3Dd"),
        ("line\nbreak", "line%0Abreak"),
        ("\u{7F}", "%7F"),
        ("AZaz09-._~", "AZaz09-._~"),
        ("", ""),
    ])
    func encodes(text: String, encoded: String) {
        #expect(PercentEncoding.encode(text) == encoded)
    }

    @Test("decoding accepts upper- and lower-case hex and leaves other text alone", arguments: [
        ("Slow%20Net", "Slow Net"),
        ("100%25%20Loss", "100% Loss"),
        ("Caf%C3%A9", "Café"),
        ("caf%c3%a9", "café"),
        ("Café", "Café"),
        ("a+b", "a+b"),
        ("%2F", "/"),
        ("", ""),
    ])
    func decodes(text: String, decoded: String) {
        #expect(PercentEncoding.decode(Substring(text)) == decoded)
    }

    static let roundTripSamples: [String] = [
        "Slow Net", "100% Loss", "WiFi 802.11ac", "High Latency DNS", "Café", "日本語のプロファイル", "🐢 slow 🐇 fast",
        "%", "%%", "%25", "%zz", "a%2", "  spaces  ", "tab\there", "quote\"s and 'apostrophes'", "back\\slash",
        "emoji 👩🏽‍💻 sequence", "e\u{301}", "\u{0}", "/v1/profiles/x?y=z#w",
    ]
        + [String((0...127).map { Character(Unicode.Scalar(UInt8($0))) })]
        + (0...127).map { String(Character(Unicode.Scalar(UInt8($0)))) }

    @Test("PercentEncoding.decode inverts encode")
    func roundTrip() {
        for text in Self.roundTripSamples {
            let encoded = PercentEncoding.encode(text)
            #expect(encoded.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._~%".contains($0)) }, "\(encoded)")
            #expect(PercentEncoding.decode(Substring(encoded)) == text, "\(text.debugDescription) encoded as \(encoded)")
        }
    }

    @Test("decoding works on a slice of a longer path")
    func decodesSubstring() throws {
        let path = APIPath.profile("100% Loss")
        let name = path.dropFirst(APIPath.profiles.count + 1)
        #expect(PercentEncoding.decode(name) == "100% Loss")
        let middle = "/x/Slow%20Net/y".split(separator: "/")[1]
        #expect(PercentEncoding.decode(middle) == "Slow Net")
    }

    @Test("malformed escapes are refused", arguments: ["%", "%4", "%zz", "%g0", "%0g", "abc%", "abc%4", "100%", "%%", "% 4", "%4 "])
    func malformed(text: String) {
        #expect(PercentEncoding.decode(Substring(text)) == nil)
    }

    @Test("escapes that are not UTF-8 are refused", arguments: ["%FF", "%C3", "%C3%28", "%E6%97", "%80"])
    func notUTF8(text: String) {
        #expect(PercentEncoding.decode(Substring(text)) == nil)
    }

    @Test("a sign inside an escape is malformed", arguments: ["%+1", "%+F", "%+a", "a%+4b", "%-0"])
    func signedEscape(text: String) {
        #expect(PercentEncoding.decode(Substring(text)) == nil)
    }
}
