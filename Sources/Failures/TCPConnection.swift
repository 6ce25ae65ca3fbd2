import CSocketDiag
import Glibc
import IPAddressText

/// One TCP connection of a network namespace as the kernel's sock_diag reports it: its two ends
/// and state, and the kernel's own id for it, which a destroy names so that it takes exactly this
/// socket (not a later one with the same addresses).
public struct TCPConnection: Sendable {
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// 4 network-order bytes for IPv4 (an IPv4-mapped IPv6 address included), else 16.
        public var address: [UInt8]
        public var port: UInt16

        public init(address: [UInt8], port: UInt16) {
            self.address = address
            self.port = port
        }

        /// `192.0.2.7:443`, `[2001:db8::7]:443`.
        public var description: String {
            address.count == 4 ? "\(formatIPAddress(address)):\(port)" : "[\(formatIPAddress(address))]:\(port)"
        }

        /// The endpoint an address of the kernel's (16 bytes, IPv4 in the first four) stands for.
        init(kernel bytes: [UInt8], family: Int32, port: UInt16) {
            if family == AF_INET {
                address = Array(bytes[0..<4])
            } else if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                address = Array(bytes[12..<16])
            } else {
                address = bytes
            }
            self.port = port
        }

        public var isLoopback: Bool {
            address.count == 4 ? address[0] == 127 : address == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    public var local: Endpoint
    public var remote: Endpoint
    /// The TCP state, by the kernel's numbers (`TCPState`).
    public var state: UInt8
    let kernelID: linkcond_diag_socket

    init(_ socket: linkcond_diag_socket) {
        var kernel = socket
        let source = withUnsafeBytes(of: &kernel.source) { Array($0) }
        let destination = withUnsafeBytes(of: &kernel.destination) { Array($0) }
        local = Endpoint(kernel: source, family: Int32(socket.family), port: socket.source_port)
        remote = Endpoint(kernel: destination, family: Int32(socket.family), port: socket.destination_port)
        state = socket.state
        kernelID = socket
    }

    /// A connection for a test of what a selection takes: no kernel id.
    package init(local: Endpoint, remote: Endpoint, state: UInt8 = TCPState.established) {
        self.local = local
        self.remote = remote
        self.state = state
        kernelID = linkcond_diag_socket()
    }
}

/// The kernel's TCP states that a reset takes: a connection that exists, or is being made or
/// closed, with a peer at the other end. Neither a listener (new connections must work) nor
/// TIME_WAIT (nothing left to reset).
public enum TCPState {
    public static let established: UInt8 = 1
    public static let synSent: UInt8 = 2
    public static let synReceived: UInt8 = 3
    public static let finWait1: UInt8 = 4
    public static let finWait2: UInt8 = 5
    public static let closeWait: UInt8 = 8
    public static let lastAck: UInt8 = 9
    public static let closing: UInt8 = 11

    static let resettable: [UInt8] = [established, synSent, synReceived, finWait1, finWait2, closeWait, lastAck, closing]
    static let resettableMask: UInt32 = resettable.reduce(0) { $0 | 1 << UInt32($1) }
}
