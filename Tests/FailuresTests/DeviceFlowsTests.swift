@testable import Failures
@testable import Netlink
import Testing

@Suite("A gateway device's handover")
struct DeviceFlowsTests {
    static func attribute(_ kind: UInt16, _ value: [UInt8], nested: Bool = false) -> [UInt8] {
        NetfilterSocket.attribute(kind | (nested ? 0x8000 : 0), value)
    }

    /// One conntrack listing message (family, original tuple from `source` to 192.0.2.1), as the kernel sends it.
    static func message(family: UInt8, source: [UInt8]) -> (bytes: [UInt8], tuple: [UInt8]) {
        let addresses = source.count == 4
            ? attribute(1, source) + attribute(2, [192, 0, 2, 1])
            : attribute(3, source) + attribute(4, [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1])
        let tuple = attribute(1, attribute(1, addresses, nested: true) + attribute(2, attribute(1, [6]), nested: true), nested: true)
        let body: [UInt8] = [family, 0, 0, 0] + tuple + attribute(3, [0, 0, 0, 1]) + attribute(12, [0, 0, 0, 7])
        let length = UInt32(16 + body.count)
        let header: [UInt8] = [UInt8(length & 0xFF), UInt8(length >> 8), 0, 0, 0, 1, 2, 0] + Array(repeating: 0, count: 8)
        return (header + body, tuple)
    }

    static let done: [UInt8] = [20, 0, 0, 0, 3, 0, 2, 0] + Array(repeating: 0, count: 12)

    @Test("a conntrack listing's entries: each one's family, original tuple as it came, and source; the end of the listing")
    func listing() throws {
        let device: [UInt8] = [10, 80, 1, 11]
        let other: [UInt8] = [0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [0x11]
        let (first, firstTuple) = Self.message(family: 2, source: device)
        let (second, secondTuple) = Self.message(family: 10, source: other)
        let (entries, ended) = try NetfilterSocket.connectionTuples(inMessages: ArraySlice(first + second + Self.done), "list")
        #expect(ended)
        #expect(entries.map(\.source) == [device, other])
        #expect(entries.map(\.family) == [2, 10])
        #expect(entries.map(\.originalTuple) == [firstTuple, secondTuple])
        #expect(entries.allSatisfy { $0.identifier == Self.attribute(12, [0, 0, 0, 7]) }, "its CTA_ID, for a delete of that entry alone")
        #expect(entries.allSatisfy { $0.protocolNumber == 6 })
        let (partial, partialEnded) = try NetfilterSocket.connectionTuples(inMessages: ArraySlice(first), "list")
        #expect(partial.count == 1 && !partialEnded)
    }

    /// One UDP entry from 10.80.1.11:40000 to 192.0.2.1:53, whose far end answers `replyTo`.
    static func udpEntry(replyTo: [UInt8], port: UInt16) -> [UInt8] {
        let device: [UInt8] = [10, 80, 1, 11], server: [UInt8] = [192, 0, 2, 1]
        func direction(_ source: [UInt8], _ sourcePort: UInt16, _ destination: [UInt8], _ destinationPort: UInt16) -> [UInt8] {
            attribute(1, attribute(1, source) + attribute(2, destination), nested: true)
                + attribute(2, attribute(1, [17]) + attribute(2, [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF)])
                    + attribute(3, [UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF)]), nested: true)
        }
        let body: [UInt8] = [2, 0, 0, 0] + attribute(1, direction(device, 40000, server, 53), nested: true)
            + attribute(2, direction(server, 53, replyTo, port), nested: true) + attribute(12, [0, 0, 0, 9])
        let length = UInt32(16 + body.count)
        return [UInt8(length & 0xFF), UInt8(length >> 8), 0, 0, 0, 1, 2, 0] + Array(repeating: 0, count: 8) + body
    }

    @Test("an entry no NAT changed (the far end answers the device's own address and port) is untranslated; one a NAT changed is not")
    func untranslated() throws {
        let plain = Self.udpEntry(replyTo: [10, 80, 1, 11], port: 40000)
        let translated = Self.udpEntry(replyTo: [10, 79, 1, 1], port: 51234)
        let portOnly = Self.udpEntry(replyTo: [10, 80, 1, 11], port: 51234)
        let (entries, _) = try NetfilterSocket.connectionTuples(inMessages: ArraySlice(plain + translated + portOnly), "list")
        #expect(entries.map(\.isUntranslated) == [true, false, false])
        #expect(entries.map(\.replyDestinationPort) == [40000, 51234, 51234])
    }

    @Test("hostile listings: a length past the bytes read, an attribute past its message, a source of the wrong size, an error code of Int32.min")
    func hostile() throws {
        let (first, _) = Self.message(family: 2, source: [10, 80, 1, 11])
        var longer = first
        longer[0] = UInt8(first.count + 40)
        #expect(try NetfilterSocket.connectionTuples(inMessages: ArraySlice(longer), "list").0.isEmpty)
        var broken = first
        broken[20] = 0xFF  // the tuple's own length, past the message
        #expect(try NetfilterSocket.connectionTuples(inMessages: ArraySlice(broken), "list").0.isEmpty)
        let (odd, _) = Self.message(family: 2, source: [10, 80, 1])
        #expect(try NetfilterSocket.connectionTuples(inMessages: ArraySlice(odd), "list").0.isEmpty)
        let refused: [UInt8] = [20, 0, 0, 0, 2, 0, 0, 0] + Array(repeating: 0, count: 8) + [0xFF, 0xFF, 0xFF, 0xFF]  // NLMSG_ERROR -1: EPERM
        #expect(throws: NetlinkError.self) { try NetfilterSocket.connectionTuples(inMessages: ArraySlice(refused), "list") }
        let unnegatable: [UInt8] = [20, 0, 0, 0, 2, 0, 0, 0] + Array(repeating: 0, count: 8) + [0x00, 0x00, 0x00, 0x80]  // Int32.min: no errno negates it
        #expect(throws: NetlinkError.self) { try NetfilterSocket.connectionTuples(inMessages: ArraySlice(unnegatable), "list") }
    }

    @Test("the handover's NAT: the device's addresses leave anywhere but back through its interface, translated at random, ahead of the machine's own NAT")
    func table() {
        let handover = DeviceFlows(addresses: [[10, 80, 1, 11], [0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [0x11]], interface: "gw-lan1", condition: "netns/gw/gw-lan1@device=10.80.1.11")
        #expect(handover.table.hasPrefix("linkcond_device_"))
        let table = handover.table
        #expect(handover.commands == """
            add table inet \(table)
            add chain inet \(table) postrouting { type nat hook postrouting priority srcnat - 10; policy accept; }
            flush chain inet \(table) postrouting
            add rule inet \(table) postrouting ip saddr 10.80.1.11 oifname != "gw-lan1" masquerade random
            add rule inet \(table) postrouting ip6 saddr fd80:1::11 oifname != "gw-lan1" masquerade random
            add chain inet \(table) handover { type filter hook forward priority filter - 20; policy accept; }
            flush chain inet \(table) handover
            add rule inet \(table) handover ip saddr 10.80.1.11 ct state new tcp flags & (fin | syn | rst | ack) != syn reject with tcp reset
            add rule inet \(table) handover ip daddr 10.80.1.11 ct state new tcp flags & (fin | syn | rst | ack) != syn reject with tcp reset
            add rule inet \(table) handover ip daddr 10.80.1.11 ct state new meta l4proto udp drop
            add rule inet \(table) handover ip6 saddr fd80:1::11 ct state new tcp flags & (fin | syn | rst | ack) != syn reject with tcp reset
            add rule inet \(table) handover ip6 daddr fd80:1::11 ct state new tcp flags & (fin | syn | rst | ack) != syn reject with tcp reset
            add rule inet \(table) handover ip6 daddr fd80:1::11 ct state new meta l4proto udp drop

            """)
        // The reset's chain beside it in the same table: written alone, it leaves the NAT chain be.
        #expect(handover.resetRules.hasPrefix("add table inet \(table)\nadd chain inet \(table) forward { type filter hook forward priority filter - 20; policy accept; }\nflush chain inet \(table) forward\n"))
        #expect(handover.resetRules.contains("add rule inet \(table) forward ct mark 0x6c727374 meta l4proto tcp reject with tcp reset\n"))
        #expect(handover.resetRules.hasSuffix("add chain inet \(table) output { type filter hook output priority raw; policy accept; }\nflush chain inet \(table) output\nadd rule inet \(table) output meta mark 0x6c727370 notrack\n"))
        #expect(handover.removal == "delete table inet \(handover.table)\n")
        #expect(!DeviceFlows(addresses: [], interface: "a\"b", condition: "x").isNameable)
        #expect(DeviceFlows(addresses: [], interface: "x", condition: "a") != DeviceFlows(addresses: [], interface: "x", condition: "b"))
    }
}

@Suite("A reset's probe")
struct ResetProbeTests {
    @Test("a bare ACK from the far end's address and port, with the numbers asked for and a TCP checksum a receiver verifies", arguments: [4, 16])
    func probe(addressLength: Int) {
        let source: [UInt8] = addressLength == 4 ? [192, 0, 2, 1] : [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1]
        let destination: [UInt8] = addressLength == 4 ? [10, 80, 1, 11] : [0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [0x11]
        let probe = ResetProbe(from: source, port: 443, to: destination, port: 40000, sequence: 0x0102_0304, acknowledgement: 0xA0B0_C0D0)
        let headerLength = addressLength == 4 ? 20 : 40
        let tcp = Array(probe.bytes[headerLength...])
        #expect(probe.bytes.count == headerLength + 20)
        #expect(tcp[0..<4] == [0x01, 0xBB, 0x9C, 0x40] && tcp[4..<8] == [1, 2, 3, 4] && tcp[8..<12] == [0xA0, 0xB0, 0xC0, 0xD0])
        #expect(tcp[12] == 0x50 && tcp[13] == 0x10, "five words, ACK alone")
        let pseudoHeader = source + destination + (addressLength == 4 ? [0, 6, 0, 20] : [0, 0, 0, 20, 0, 0, 0, 6])
        #expect(RawPacket.internetChecksum(pseudoHeader + tcp) == 0)
        #expect(addressLength == 4 ? probe.bytes[9] == 6 && Array(probe.bytes[12..<16]) == source : probe.bytes[6] == 6 && Array(probe.bytes[8..<24]) == source)
    }
}
