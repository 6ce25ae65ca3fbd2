import ControlAPI
import Foundation
import Testing

/// Compact JSON with sorted keys, as stable text to compare against.
func jsonText<Document: Encodable>(_ document: Document) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(document), as: UTF8.self)
}

func decode<Document: Decodable>(_ type: Document.Type, from text: String) throws -> Document {
    try JSONDecoder().decode(type, from: Data(text.utf8))
}

enum Fixtures {
    static let slowNet = ProfileDocument(
        name: "Slow Net",
        description: "Very limited bandwidth.",
        file: "/usr/share/linkcond/profiles/slow-net.yaml",
        downlink: DirectionDocument(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
        uplink: DirectionDocument(bandwidth: "32kbit", delay: "100ms", jitter: "0ms", loss: "0%"),
        dnsDelay: "200ms",
        summary: "down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms"
    )

    static let slowNetJSON = #"{"description":"Very limited bandwidth.","dnsDelay":"200ms","#
        + #""downlink":{"bandwidth":"32kbit","delay":"100ms","jitter":"0ms","loss":"0%"},"#
        + #""file":"/usr/share/linkcond/profiles/slow-net.yaml","name":"Slow Net","#
        + #""summary":"down: 32kbit 100ms; up: 32kbit 100ms; dns: +200ms","#
        + #""uplink":{"bandwidth":"32kbit","delay":"100ms","jitter":"0ms","loss":"0%"}}"#

    static let blackHole = ProfileDocument(
        name: "Black Hole",
        description: "",
        file: "/usr/share/linkcond/profiles/black-hole.yaml",
        downlink: DirectionDocument(bandwidth: nil, delay: "0ms", jitter: "0ms", loss: "100%"),
        uplink: DirectionDocument(bandwidth: nil, delay: "0ms", jitter: "0ms", loss: "0%"),
        dnsDelay: "0ms",
        summary: "down: 100% loss; up: unshaped"
    )
}

@Suite("Control API documents as JSON")
struct DocumentJSONTests {
    @Test("StatusResponse while a profile is active")
    func statusActive() throws {
        let status = StatusResponse(
            interface: "eth0", ifb: "ifb-linkcond", active: true, profile: Fixtures.slowNet,
            since: "2025-06-01T12:00:00Z", exemptions: ["tcp/22", "udp/53"]
        )
        #expect(try jsonText(status) ==
            #"{"active":true,"exemptions":["tcp/22","udp/53"],"id":"eth0","ifb":"ifb-linkcond","interface":"eth0","isDefault":true,"#
            + #""profile":"# + Fixtures.slowNetJSON + #","since":"2025-06-01T12:00:00Z"}"#)
    }

    @Test("StatusResponse while off leaves the profile out")
    func statusOff() throws {
        let status = StatusResponse(id: "eth1", isDefault: false, interface: "eth1", ifb: "ifb0", active: false, profile: nil, since: "2025-06-01T12:00:00Z", exemptions: [])
        #expect(try jsonText(status) ==
            #"{"active":false,"exemptions":[],"id":"eth1","ifb":"ifb0","interface":"eth1","isDefault":false,"since":"2025-06-01T12:00:00Z"}"#)
    }

    @Test("StatusResponse decodes with the profile absent or null")
    func statusOffDecodes() throws {
        let absent = try decode(StatusResponse.self, from: #"{"active":false,"exemptions":[],"id":"eth0","ifb":"ifb0","interface":"eth0","isDefault":true,"since":"s"}"#)
        let null = try decode(StatusResponse.self, from: #"{"active":false,"exemptions":[],"id":"eth0","ifb":"ifb0","interface":"eth0","isDefault":true,"profile":null,"since":"s"}"#)
        #expect(absent.profile == nil)
        #expect(absent == null)
    }

    @Test("ProfileDocument")
    func profileDocument() throws {
        #expect(try jsonText(Fixtures.slowNet) == Fixtures.slowNetJSON)
    }

    @Test("an unlimited direction leaves the bandwidth out")
    func profileDocumentWithoutBandwidth() throws {
        #expect(try jsonText(Fixtures.blackHole) ==
            #"{"description":"","dnsDelay":"0ms","downlink":{"delay":"0ms","jitter":"0ms","loss":"100%"},"#
            + #""file":"/usr/share/linkcond/profiles/black-hole.yaml","name":"Black Hole","#
            + #""summary":"down: 100% loss; up: unshaped","uplink":{"delay":"0ms","jitter":"0ms","loss":"0%"}}"#)
    }

    @Test("ProfileListResponse with a problem")
    func profileList() throws {
        let list = ProfileListResponse(
            profiles: [ProfileSummary(name: "Slow Net", description: "Slow.", file: "/usr/share/linkcond/profiles/slow-net.yaml", summary: "down: 32kbit; up: 32kbit")],
            problems: [ProfileProblem(code: "bad-value", file: "/etc/linkcond/profiles/broken.yaml", line: 3, field: "downlink.loss", message: "loss '120%' is out of range")]
        )
        #expect(try jsonText(list) ==
            #"{"problems":[{"code":"bad-value","field":"downlink.loss","file":"/etc/linkcond/profiles/broken.yaml","line":3,"#
            + #""message":"loss '120%' is out of range"}],"#
            + #""profiles":[{"description":"Slow.","file":"/usr/share/linkcond/profiles/slow-net.yaml","name":"Slow Net","#
            + #""summary":"down: 32kbit; up: 32kbit"}]}"#)
    }

    @Test("an empty ProfileListResponse keeps both arrays")
    func emptyProfileList() throws {
        #expect(try jsonText(ProfileListResponse(profiles: [], problems: [])) == #"{"problems":[],"profiles":[]}"#)
    }

    @Test("ErrorResponse with suggestions")
    func errorWithSuggestions() throws {
        let error = ErrorResponse(code: .unknownProfile, message: "no profile named 'slow nte'", suggestions: ["Slow Net"])
        #expect(try jsonText(error) ==
            #"{"error":{"code":"unknown-profile","message":"no profile named 'slow nte'","suggestions":["Slow Net"]}}"#)
    }

    @Test("ErrorResponse without suggestions leaves them out")
    func errorWithoutSuggestions() throws {
        let error = ErrorResponse(code: .foreignQdisc, message: "eth0 has a qdisc linkcond did not create")
        #expect(try jsonText(error) ==
            #"{"error":{"code":"foreign-qdisc","message":"eth0 has a qdisc linkcond did not create"}}"#)
        #expect(error.error.suggestions == nil)
    }

    @Test("ActivateRequest leaves replaceForeign out when nil")
    func activateRequest() throws {
        #expect(try jsonText(ActivateRequest(profile: "Slow Net")) == #"{"profile":"Slow Net"}"#)
        #expect(try jsonText(ActivateRequest(profile: "Slow Net", replaceForeign: false)) == #"{"profile":"Slow Net","replaceForeign":false}"#)
        #expect(try jsonText(ActivateRequest(profile: "Slow Net", replaceForeign: true)) == #"{"profile":"Slow Net","replaceForeign":true}"#)
    }

    @Test("ActivateRequest decodes replaceForeign")
    func activateRequestDecodes() throws {
        #expect(try decode(ActivateRequest.self, from: #"{"profile":"slow-net","replaceForeign":true}"#)
            == ActivateRequest(profile: "slow-net", replaceForeign: true))
        #expect(try decode(ActivateRequest.self, from: #"{"profile":"slow-net"}"#)
            == ActivateRequest(profile: "slow-net", replaceForeign: nil))
    }

    @Test("ActivateRequest names a profile or brings a definition (the daemon requires one of them)")
    func activateRequestProfileOrDefinition() throws {
        #expect(try decode(ActivateRequest.self, from: #"{"replaceForeign":true}"#) == ActivateRequest(replaceForeign: true))
        let defined = try decode(ActivateRequest.self, from: #"{"definition":{"yaml":"name: x\n","source":"command line"}}"#)
        #expect(defined.definition == ProfileDefinition(yaml: "name: x\n", source: "command line"))
        #expect(defined.profile == nil)
    }

    @Test("ActivateRequest with a profile of the wrong type does not decode")
    func activateRequestWrongType() {
        #expect(throws: DecodingError.self) { try decode(ActivateRequest.self, from: #"{"profile":42}"#) }
        #expect(throws: DecodingError.self) { try decode(ActivateRequest.self, from: #"{"profile":"x","replaceForeign":"yes"}"#) }
    }

    @Test("every document survives encoding and decoding")
    func roundTrips() throws {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let status = StatusResponse(interface: "eth0", ifb: "ifb0", active: true, profile: Fixtures.blackHole, since: "t", exemptions: ["tcp/22"])
        #expect(try decoder.decode(StatusResponse.self, from: encoder.encode(status)) == status)
        let list = ProfileListResponse(
            profiles: [ProfileSummary(name: "100% Loss", description: "ünïcode ±", file: "f", summary: "s")],
            problems: [ProfileProblem(code: "syntax", file: "f", line: 0, field: "", message: "m")]
        )
        #expect(try decoder.decode(ProfileListResponse.self, from: encoder.encode(list)) == list)
        let error = ErrorResponse(code: .internal, message: "m", suggestions: [])
        #expect(try decoder.decode(ErrorResponse.self, from: encoder.encode(error)) == error)
        let request = ActivateRequest(profile: "WiFi 802.11ac", replaceForeign: false)
        #expect(try decoder.decode(ActivateRequest.self, from: encoder.encode(request)) == request)
    }
}
