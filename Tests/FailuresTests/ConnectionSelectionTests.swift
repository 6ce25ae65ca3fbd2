@testable import Failures
import Shaping
import Testing

enum PeerMatchForTest {
    static func loopback(port: UInt16) -> PeerMatch {
        PeerMatch(networks: [IPNetwork(address: [127, 0, 0, 1], prefixLength: 32)], port: port, transports: [.tcp], text: "127.0.0.1:\(port)")
    }
}

@Suite("Which connections a reset takes")
struct ConnectionSelectionTests {
    private func connection(_ local: [UInt8], _ localPort: UInt16, _ remote: [UInt8], _ remotePort: UInt16) -> TCPConnection {
        TCPConnection(local: .init(address: local, port: localPort), remote: .init(address: remote, port: remotePort))
    }

    @Test("A peer's network and port; IPv6 and IPv4 apart")
    func peer() {
        let match = PeerMatch(networks: [IPNetwork(address: [10, 1, 0, 0], prefixLength: 16)], port: 443, transports: [.tcp, .udp], text: "10.1.0.0/16:443")
        let selection = ConnectionSelection(.peer(match), exemptions: .default)
        #expect(selection.takes(connection([10, 0, 0, 2], 50000, [10, 1, 9, 9], 443)))
        #expect(!selection.takes(connection([10, 0, 0, 2], 50000, [10, 2, 9, 9], 443)))
        #expect(!selection.takes(connection([10, 0, 0, 2], 50000, [10, 1, 9, 9], 8443)))
        #expect(!selection.takes(connection([UInt8](repeating: 0, count: 15) + [2], 50000, [UInt8](repeating: 0, count: 15) + [9], 443)))
        let udpOnly = PeerMatch(networks: [IPNetwork(address: [10, 1, 0, 0], prefixLength: 16)], port: 53, transports: [.udp], text: "10.1.0.0/16:53/udp")
        #expect(!ConnectionSelection(.peer(udpOnly), exemptions: .default).takes(connection([10, 0, 0, 2], 50000, [10, 1, 9, 9], 53)))
    }

    @Test("Any address (*:443) is any peer beyond the interface, never loopback; a loopback peer named is taken")
    func anyAddress() {
        let any = PeerMatch(
            networks: [IPNetwork(address: [0, 0, 0, 0], prefixLength: 0), IPNetwork(address: [UInt8](repeating: 0, count: 16), prefixLength: 0)],
            port: 443, transports: [.tcp], text: "*:443"
        )
        let selection = ConnectionSelection(.peer(any), exemptions: .default)
        #expect(selection.takes(connection([10, 0, 0, 2], 50000, [203, 0, 113, 1], 443)))
        #expect(!selection.takes(connection([127, 0, 0, 1], 50000, [127, 0, 0, 1], 443)))
        #expect(!selection.takes(connection([UInt8](repeating: 0, count: 15) + [1], 50000, [UInt8](repeating: 0, count: 15) + [1], 443)))
        #expect(ConnectionSelection(.peer(PeerMatchForTest.loopback(port: 443)), exemptions: .default)
            .takes(connection([127, 0, 0, 1], 50000, [127, 0, 0, 1], 443)))
    }

    @Test("The exemptions win: SSH either way, an exempt network")
    func exemptions() {
        let exemptions = Exemptions(ports: [Exemptions.ssh], networks: [IPNetwork(address: [198, 51, 100, 0], prefixLength: 24)])
        let selection = ConnectionSelection(.leavingTheNamespace, exemptions: exemptions)
        #expect(selection.takes(connection([10, 0, 0, 2], 50000, [203, 0, 113, 1], 443)))
        #expect(!selection.takes(connection([10, 0, 0, 2], 50000, [203, 0, 113, 1], 22)))
        #expect(!selection.takes(connection([10, 0, 0, 2], 22, [203, 0, 113, 1], 50000)))
        #expect(!selection.takes(connection([10, 0, 0, 2], 50000, [198, 51, 100, 7], 443)))
    }

    @Test("An IPv4-mapped IPv6 address is its IPv4 address")
    func mapped() {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[10] = 0xFF
        bytes[11] = 0xFF
        bytes[12...15] = [192, 0, 2, 7]
        let endpoint = TCPConnection.Endpoint(kernel: bytes, family: 10, port: 443)
        #expect(endpoint.address == [192, 0, 2, 7] && endpoint.description == "192.0.2.7:443")
    }
}
