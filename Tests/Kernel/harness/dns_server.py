"""A small authoritative DNS server for the kernel suite: every name under `linkcond.test` has an
A record (192.0.2.1) and an AAAA record (2001:db8::1); any other name is "no such name". Each
question it hears is appended to the log, so that a test can tell which queries reached it.

    dns_server.py --address ADDR [--address ADDR...] --log FILE --ready FILE
"""

from __future__ import annotations

import argparse
import select
import socket
import struct
import sys
from pathlib import Path

ZONE = "linkcond.test"
A = socket.inet_pton(socket.AF_INET, "192.0.2.1")
AAAA = socket.inet_pton(socket.AF_INET6, "2001:db8::1")


def question(message: bytes) -> tuple[str, int, int] | None:
    """The first question's name, its type, and where it ends; None for anything else."""
    labels, position = [], 12
    while position < len(message):
        length = message[position]
        position += 1
        if length == 0:
            break
        if length > 63:
            return None
        labels.append(message[position:position + length].decode("ascii", "replace").lower())
        position += length
    if position + 4 > len(message):
        return None
    kind = struct.unpack(">H", message[position:position + 2])[0]
    return ".".join(labels), kind, position + 4


def answer(message: bytes) -> bytes | None:
    if len(message) < 12:
        return None
    ident, flags = struct.unpack(">HH", message[:4])
    asked = question(message)
    if asked is None:
        return None
    name, kind, end = asked
    known = name == ZONE or name.endswith("." + ZONE)
    records = []
    if known and kind in (1, 28):
        data = A if kind == 1 else AAAA
        records.append(b"\xc0\x0c" + struct.pack(">HHIH", kind, 1, 60, len(data)) + data)
    code = 0 if known else 3
    header = struct.pack(">HHHHHH", ident, 0x8400 | (flags & 0x0100) | code, 1, len(records), 0, 0)
    return header + message[12:end] + b"".join(records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", action="append", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--exclusive", action="store_true",
                        help="bind without SO_REUSEADDR, as a server that lets no other socket share its port")
    args = parser.parse_args()
    sockets = []
    for address in args.address:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        server = socket.socket(family, socket.SOCK_DGRAM)
        # Beside the probe server's UDP echo on every address's port 53 (which sets it too): a
        # datagram to this address comes here, the more specific socket.
        if not args.exclusive:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, 53))
        sockets.append(server)
    Path(args.ready).touch()
    with open(args.log, "a", buffering=1) as log:
        while True:
            readable, _, _ = select.select(sockets, [], [])
            for server in readable:
                message, peer = server.recvfrom(4096)
                asked = question(message) if len(message) >= 12 else None
                log.write(f"{asked[0] if asked else '?'}\n")
                reply = answer(message)
                if reply:
                    server.sendto(reply, peer)


if __name__ == "__main__":
    sys.exit(main())
