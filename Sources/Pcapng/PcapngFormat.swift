/// The block types and option codes of pcapng (the IETF draft "PCAP Next Generation Dump File
/// Format") that linkcond writes and reads.
package enum PcapngFormat {
    package static let sectionHeader: UInt32 = 0x0A0D_0D0A
    package static let interfaceDescription: UInt32 = 0x0000_0001
    package static let interfaceStatistics: UInt32 = 0x0000_0005
    package static let enhancedPacket: UInt32 = 0x0000_0006
    static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    static let endOfOptions: UInt16 = 0
    static let comment: UInt16 = 1
    static let userApplication: UInt16 = 4  // shb_userappl
    static let operatingSystem: UInt16 = 3  // shb_os
    static let interfaceName: UInt16 = 2  // if_name
    static let interfaceDescriptionText: UInt16 = 3  // if_description
    static let timestampResolution: UInt16 = 9  // if_tsresol
    static let packetFlags: UInt16 = 2  // epb_flags
    static let statisticsStart: UInt16 = 2  // isb_starttime
    static let statisticsEnd: UInt16 = 3  // isb_endtime
    static let interfaceReceived: UInt16 = 4  // isb_ifrecv
    static let interfaceDropped: UInt16 = 5  // isb_ifdrop
    static let filterAccepted: UInt16 = 6  // isb_filteraccept
    static let systemDropped: UInt16 = 7  // isb_osdrop
    static let deliveredToUser: UInt16 = 8  // isb_usrdeliv

    /// Blocks and options are padded to 32 bits.
    static func padded(_ count: Int) -> Int {
        (count + 3) & ~3
    }
}

/// Which way a packet went, as pcapng's `epb_flags` says it (bits 0 and 1).
public enum PacketDirection: UInt32, Sendable, Equatable, Codable {
    case unknown = 0
    case inbound = 1
    case outbound = 2
}

/// Link types (the tcpdump.org list) of the interfaces linkcond describes.
public enum LinkType: UInt16, Sendable, Equatable {
    case ethernet = 1
    /// LINKTYPE_USER0: the trace's notes on the condition, each a packet of UTF-8 text.
    case notes = 147
    case raw = 101
    case linuxCooked = 113
    case linuxCookedV2 = 276
}
