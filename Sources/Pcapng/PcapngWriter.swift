/// Encodes pcapng blocks, little-endian, timestamps in nanoseconds (`if_tsresol` 9).
///
/// Each function returns one whole block, so a stream can be cut between any two of them: a
/// reader of a capture the client stopped early still finds every block it received whole.
public struct PcapngWriter: Sendable {
    public init() {}

    /// The section header: the application's name, the system, and a comment on the capture.
    public func sectionHeader(application: String, system: String?, comment: String?) -> [UInt8] {
        var body = Bytes()
        body.append32(PcapngFormat.byteOrderMagic)
        body.append16(1)
        body.append16(0)
        body.append64(UInt64.max)  // the section's length is not known while it is written
        var options = Options()
        options.text(PcapngFormat.userApplication, application)
        options.text(PcapngFormat.operatingSystem, system)
        options.text(PcapngFormat.comment, comment)
        return block(PcapngFormat.sectionHeader, body: body, options: options)
    }

    /// An interface; packets name it by its place among the section's interfaces (0, 1, …).
    public func interface(_ link: LinkType, snapLength: UInt32, name: String, description: String?, comment: String? = nil) -> [UInt8] {
        var body = Bytes()
        body.append16(link.rawValue)
        body.append16(0)
        body.append32(snapLength)
        var options = Options()
        options.text(PcapngFormat.interfaceName, name)
        options.text(PcapngFormat.interfaceDescriptionText, description)
        options.raw(PcapngFormat.timestampResolution, [9])
        options.text(PcapngFormat.comment, comment)
        return block(PcapngFormat.interfaceDescription, body: body, options: options)
    }

    /// A packet: `data` as captured (at most the snap length), `length` as it was on the wire.
    public func packet(
        interface: UInt32, nanoseconds: UInt64, data: some Collection<UInt8>, length: UInt32,
        direction: PacketDirection = .unknown, comment: String? = nil
    ) -> [UInt8] {
        var body = Bytes()
        body.append32(interface)
        body.append32(UInt32(truncatingIfNeeded: nanoseconds >> 32))
        body.append32(UInt32(truncatingIfNeeded: nanoseconds))
        body.append32(UInt32(data.count))
        body.append32(max(length, UInt32(data.count)))
        body.bytes.append(contentsOf: data)
        body.pad()
        var options = Options()
        if direction != .unknown {
            options.value32(PcapngFormat.packetFlags, direction.rawValue)
        }
        options.text(PcapngFormat.comment, comment)
        return block(PcapngFormat.enhancedPacket, body: body, options: options)
    }

    /// An interface's counts at the end of a capture.
    public func statistics(interface: UInt32, at nanoseconds: UInt64, _ counts: CaptureCounts, comment: String?) -> [UInt8] {
        var body = Bytes()
        body.append32(interface)
        body.append32(UInt32(truncatingIfNeeded: nanoseconds >> 32))
        body.append32(UInt32(truncatingIfNeeded: nanoseconds))
        var options = Options()
        options.timestamp(PcapngFormat.statisticsStart, counts.startNanoseconds)
        options.timestamp(PcapngFormat.statisticsEnd, nanoseconds)
        options.value64(PcapngFormat.interfaceReceived, counts.received)
        options.value64(PcapngFormat.interfaceDropped, counts.droppedByCondition)
        options.value64(PcapngFormat.systemDropped, counts.droppedByCapture)
        options.value64(PcapngFormat.deliveredToUser, counts.written)
        options.text(PcapngFormat.comment, comment)
        return block(PcapngFormat.interfaceStatistics, body: body, options: options)
    }

    private func block(_ type: UInt32, body: Bytes, options: Options) -> [UInt8] {
        let optionBytes = options.bytes.isEmpty ? [] : options.bytes + [0, 0, 0, 0]
        let total = UInt32(12 + body.bytes.count + optionBytes.count)
        var block = Bytes()
        block.append32(type)
        block.append32(total)
        block.bytes += body.bytes
        block.bytes += optionBytes
        block.append32(total)
        return block.bytes
    }
}

/// What a capture counted, for its statistics block.
public struct CaptureCounts: Sendable, Equatable {
    public var startNanoseconds: UInt64
    /// Packets the capture saw.
    public var received: UInt64
    /// Packets the condition dropped (loss, a full queue) while the capture ran.
    public var droppedByCondition: UInt64
    /// Packets the capture itself lost: the kernel's buffer full, or a reader too slow.
    public var droppedByCapture: UInt64
    /// Packets written to the trace.
    public var written: UInt64

    public init(startNanoseconds: UInt64, received: UInt64 = 0, droppedByCondition: UInt64 = 0, droppedByCapture: UInt64 = 0, written: UInt64 = 0) {
        self.startNanoseconds = startNanoseconds
        self.received = received
        self.droppedByCondition = droppedByCondition
        self.droppedByCapture = droppedByCapture
        self.written = written
    }
}

private struct Bytes {
    var bytes: [UInt8] = []

    mutating func append16(_ value: UInt16) {
        bytes += [UInt8(value & 0xFF), UInt8(value >> 8)]
    }

    mutating func append32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }

    mutating func append64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xFF)) }
    }

    mutating func pad() {
        bytes += repeatElement(0, count: PcapngFormat.padded(bytes.count) - bytes.count)
    }
}

private struct Options {
    var bytes: [UInt8] = []

    mutating func raw(_ code: UInt16, _ value: [UInt8]) {
        var option = Bytes()
        option.append16(code)
        option.append16(UInt16(value.count))
        option.bytes += value
        option.pad()
        bytes += option.bytes
    }

    /// An option holds at most 65 535 bytes: a longer text is cut where a character ends.
    mutating func text(_ code: UInt16, _ value: String?) {
        guard let value, !value.isEmpty else { return }
        var utf8 = Array(value.utf8)
        if utf8.count > Int(UInt16.max) {
            var end = Int(UInt16.max)
            // A UTF-8 continuation byte (10xxxxxx) never begins a character.
            while end > 0, utf8[end] & 0xC0 == 0x80 { end -= 1 }
            utf8 = Array(utf8[..<end])
        }
        raw(code, utf8)
    }

    mutating func value32(_ code: UInt16, _ value: UInt32) {
        var encoded = Bytes()
        encoded.append32(value)
        raw(code, encoded.bytes)
    }

    mutating func value64(_ code: UInt16, _ value: UInt64) {
        var encoded = Bytes()
        encoded.append64(value)
        raw(code, encoded.bytes)
    }

    /// pcapng's timestamps in options: the high 32 bits first, then the low, each in the section's order.
    mutating func timestamp(_ code: UInt16, _ nanoseconds: UInt64) {
        var encoded = Bytes()
        encoded.append32(UInt32(truncatingIfNeeded: nanoseconds >> 32))
        encoded.append32(UInt32(truncatingIfNeeded: nanoseconds))
        raw(code, encoded.bytes)
    }
}
