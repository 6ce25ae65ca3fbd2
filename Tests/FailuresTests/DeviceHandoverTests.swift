@testable import Failures
@testable import Netlink
import Testing

@Suite("A gateway device's handover")
struct DeviceHandoverTests {
    static func attribute(_ kind: UInt16, _ value: [UInt8], nested: Bool = false) -> [UInt8] {
        NetfilterSocket.attribute(kind | (nested ? 0x8000 : 0), value)
    }

    /// One conntrack listing message (family, original tuple from `source` to 192.0.2.1), as the kernel sends it.
    static func message(family: UInt8, source: [UInt8]) -> (bytes: [UInt8], tuple: [UInt8]) {
        let addresses = source.count == 4
            ? attribute(1, source) + attribute(2, [192, 0, 2, 1])
            : attribute(3, source) + attribute(4, [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1])
        let tuple = attribute(1, attribute(1, addresses, nested: true) + attribute(2, attribute(1, [6]), nested: true), nested: true)
        let body: [UInt8] = [family, 0, 0, 0] + tuple + attribute(3, [0, 0, 0, 1])
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
        let (partial, partialEnded) = try NetfilterSocket.connectionTuples(inMessages: ArraySlice(first), "list")
        #expect(partial.count == 1 && !partialEnded)
    }

    @Test("hostile listings: a length past the bytes read, an attribute past its message, a source of the wrong size")
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
    }

    @Test("the handover's NAT: the device's addresses leave anywhere but back through its interface, translated at random, ahead of the machine's own NAT")
    func table() {
        let handover = DeviceHandover(addresses: [[10, 80, 1, 11], [0xFD, 0x80, 0, 1] + Array(repeating: 0, count: 11) + [0x11]], interface: "gw-lan1", condition: "netns/gw/gw-lan1@device=10.80.1.11")
        #expect(handover.table.hasPrefix("linkcond_handover_"))
        #expect(handover.commands.contains("type nat hook postrouting priority srcnat - 10; policy accept;"))
        #expect(handover.commands.contains("    ip saddr 10.80.1.11 oifname != \"gw-lan1\" masquerade random\n"))
        #expect(handover.commands.contains("    ip6 saddr fd80:1::11 oifname != \"gw-lan1\" masquerade random\n"))
        #expect(handover.commands.hasPrefix("table inet \(handover.table)\ndelete table inet \(handover.table)\n"))
        #expect(handover.removal == "delete table inet \(handover.table)\n")
        #expect(!DeviceHandover(addresses: [], interface: "a\"b", condition: "x").isNameable)
        #expect(DeviceHandover(addresses: [], interface: "x", condition: "a") != DeviceHandover(addresses: [], interface: "x", condition: "b"))
    }
}
