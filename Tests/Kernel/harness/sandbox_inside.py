#!/usr/bin/env python3
"""What a command inside a `linkcond run --isolated` sandbox sees (standard library only): the
name servers of its resolv.conf, NAME resolved (IPv4), and COUNT TCP connections to HOST:PORT:
each one's time as connect() took it, and its handshake's round trip as the kernel measured it
(TCP_INFO's RTT right after the connection, from the SYN's sending to the SYN-ACK's arrival:
without the time the process took to wake up). One JSON line.

    sandbox_inside.py NAME HOST PORT [COUNT]
"""

import json
import socket
import struct
import sys
import time

#: struct tcp_info: tcpi_rtt (microseconds) follows 8 bytes of flags and 14 u32 fields.
TCPI_RTT = struct.Struct("=I")
TCPI_RTT_OFFSET = 8 + 15 * 4


def main():
    name, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    with open("/etc/resolv.conf") as f:
        servers = [line.split()[1] for line in f if line.startswith("nameserver") and len(line.split()) > 1]
    try:
        addresses = sorted({a[4][0] for a in socket.getaddrinfo(name, 80, socket.AF_INET)})
    except OSError as error:
        addresses = [f"lookup failed: {error}"]
    samples, handshakes = [], []
    for _ in range(count):
        began = time.monotonic()
        connection = socket.create_connection((host, port), timeout=5)
        samples.append((time.monotonic() - began) * 1000)
        info = connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        handshakes.append(TCPI_RTT.unpack_from(info, TCPI_RTT_OFFSET)[0] / 1000)
        connection.close()
    print(json.dumps({"nameservers": servers, "addresses": addresses, "connect_ms": [round(s, 3) for s in samples],
                      "handshake_rtt_ms": handshakes}), flush=True)


if __name__ == "__main__":
    main()
