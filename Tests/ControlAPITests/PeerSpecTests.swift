import ControlAPI
import Testing

@Suite("Peers of a condition with a match")
struct PeerSpecTests {
    @Test("A peer reads back in its canonical text", arguments: [
        ("10.0.0.5", "10.0.0.5"),
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("10.0.0.77/8", "10.0.0.0/8"),
        ("10.0.0.5:443", "10.0.0.5:443"),
        ("10.0.0.5:53/udp", "10.0.0.5:53/udp"),
        ("[2001:db8::1]:443", "[2001:db8::1]:443"),
        ("2001:db8::/32", "2001:db8::/32"),
        ("*:8080", "*:8080"),
    ])
    func canonical(text: String, canonical: String) throws {
        let peer = try PeerSpec(parsing: text)
        #expect(peer.description == canonical)
        #expect(try PeerSpec(parsing: canonical) == peer, "the canonical text names the same peer")
    }

    @Test("A host name reads back lower-cased, without a final dot", arguments: [
        ("api.example.com", "api.example.com"),
        ("API.Example.COM.", "api.example.com"),
        ("api.example.com:443", "api.example.com:443"),
        ("cdn-1.example.net:53/udp", "cdn-1.example.net:53/udp"),
        ("localhost:8080", "localhost:8080"),
        ("xn--bcher-kva.example:443", "xn--bcher-kva.example:443"),
    ])
    func hostNames(text: String, canonical: String) throws {
        let peer = try PeerSpec(parsing: text)
        #expect(peer.description == canonical)
        #expect(peer.address == nil && !peer.isAnyAddress && !peer.isLoopback && !peer.isIPv6)
        #expect(peer.hostName == canonical.split(separator: ":").first.map(String.init))
        #expect(try PeerSpec(parsing: canonical) == peer)
        let id = try ConditionID(parsing: "eth0@" + text)
        #expect(try ConditionID(parsing: id.description) == id)
    }

    @Test("The longest host name taken still names a state file a file system keeps")
    func longestHostName() throws {
        let labels = (0..<PeerSpec.maximumHostNameLength / 40).map { _ in String(repeating: "a", count: 39) }
        var name = labels.joined(separator: ".")
        name += "." + String(repeating: "b", count: PeerSpec.maximumHostNameLength - name.utf8.count - 1)
        #expect(name.utf8.count == PeerSpec.maximumHostNameLength)
        let id = try ConditionID(parsing: "pid/4194304/abcdefghijklmno@\(name):65535/udp")
        #expect(PercentEncoding.encode(id.description).utf8.count + ".state.json".utf8.count <= 255)
        #expect(throws: PeerSpecError.self) { try PeerSpec(parsing: name + "b") }
    }

    @Test("A peer's parts: address with host bits cleared, prefix, port and transport")
    func parts() throws {
        let network = try PeerSpec(parsing: "10.0.0.77/8")
        #expect(network.address == [10, 0, 0, 0])
        #expect(network.prefixLength == 8)
        #expect(network.port == nil && network.transport == nil)

        let host = try PeerSpec(parsing: "10.0.0.5:53/udp")
        #expect(host.address == [10, 0, 0, 5])
        #expect(host.prefixLength == 32)
        #expect(host.port == 53)
        #expect(host.transport == .udp)
        #expect(!host.isIPv6)

        let v6 = try PeerSpec(parsing: "[2001:db8::1]:443")
        #expect(v6.isIPv6)
        #expect(v6.prefixLength == 128)
        #expect(v6.port == 443)
        #expect(v6.transport == nil, "a port alone means TCP and UDP alike")

        let any = try PeerSpec(parsing: "*:8080")
        #expect(any.address == nil)
        #expect(any.port == 8080)
    }

    @Test("What cannot be a peer is refused", arguments: [
        "*", "10.0.0.5:0", "10.0.0.5:70000", "10.0.0.5/udp", "non_sense", "[::1]", "",
        // Not host names: a mistyped address, bad labels, a name in brackets or with a prefix,
        // a device by name.
        "10.0.0", "10.0.0.256", "-api.example.com", "api-.example.com", "api..example.com", "api.example.com/24",
        "[api.example.com]:443", "device=api.example.com", String(repeating: "a", count: 64) + ".example.com",
        String(repeating: "abcdefghi.", count: 17) + "com",
    ])
    func refused(text: String) {
        #expect(throws: PeerSpecError.self) { try PeerSpec(parsing: text) }
    }

    @Test("A condition id with a peer reads back to the same condition", arguments: [
        "eth0@10.0.0.5:443", "netns/ci/eth0@10.0.0.0/8", "pid/42/eth0@[::1]:8080/tcp", "@10.0.0.5",
    ])
    func conditionRoundTrip(text: String) throws {
        let id = try ConditionID(parsing: text)
        #expect(id.description == text)
        #expect(try ConditionID(parsing: id.description) == id)
        #expect(id.peer != nil)
        #expect(id.target.peer == nil)
        #expect(id.target.interface == id.interface && id.target.namespace == id.namespace)
    }

    @Test("The parts of a condition id with a peer")
    func conditionParts() throws {
        let id = try ConditionID(parsing: "netns/ci/eth0@10.0.0.0/8")
        #expect(id.interface == "eth0")
        #expect(id.namespace == .named("ci"))
        #expect(id.peer == (try PeerSpec(parsing: "10.0.0.0/8")))
        #expect(id.target == ConditionID(interface: "eth0", namespace: .named("ci")))

        let onDefault = try ConditionID(parsing: "@10.0.0.5")
        #expect(onDefault.interface.isEmpty, "the daemon fills in its own interface")
        #expect(onDefault.namespace == nil)
        #expect(onDefault.peer == (try PeerSpec(parsing: "10.0.0.5")))

        let canonicalised = try ConditionID(parsing: "eth0@10.0.0.77/8")
        #expect(canonicalised.description == "eth0@10.0.0.0/8")
    }

    @Test("A condition id whose peer cannot be one is refused and says why", arguments: [
        ("eth0@bad_name", "after '@'"), ("eth0@", "after '@'"), ("eth0@*", "after '@'"), ("eth0@10.0.0.5@10.0.0.6", "at most one '@'"),
        ("a/b@10.0.0.5", "netns/NAME/[INTERFACE]"),
    ])
    func refusedPeer(text: String, reason: String) {
        #expect {
            try ConditionID(parsing: text)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test("A device behind a gateway: by address or network alone, its own id")
    func device() throws {
        let spec = try PeerSpec(parsing: "device=192.168.50.10")
        #expect(spec.isDevice && spec.port == nil && spec.description == "device=192.168.50.10")
        #expect(try PeerSpec(parsing: "device=fd00:50::77/64").description == "device=fd00:50::/64")
        let id = try ConditionID(parsing: "netns/gw/lan0@device=192.168.50.10")
        #expect(id.peer?.isDevice == true && id.description == "netns/gw/lan0@device=192.168.50.10")
        #expect(try ConditionID(parsing: "lan0@192.168.50.10") != ConditionID(parsing: "lan0@device=192.168.50.10"))
        for bad in ["device=", "device=*:80", "device=10.0.0.1:80", "device=[::1]:80", "device=device=10.0.0.1", "device=nonsense"] {
            #expect(throws: PeerSpecError.self) { try PeerSpec(parsing: bad) }
        }
    }

    @Test("Only this machine's loopback addresses are loopback peers", arguments: [
        ("127.0.0.1:8080", true), ("127.0.0.1", true), ("127.0.0.0/8:53", true), ("127.1.2.3:80/udp", true), ("[::1]:8080", true),
        ("127.0.0.0/7:80", false), ("[::]:80", false), ("::/127", false), ("10.0.0.5:80", false), ("*:8080", false),
        ("device=127.0.0.1", false),
    ])
    func loopback(text: String, isLoopback: Bool) throws {
        #expect(try PeerSpec(parsing: text).isLoopback == isLoopback)
    }
}
