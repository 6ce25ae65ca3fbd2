#!/usr/bin/env python3
"""A host's services for a sandbox to reach (standard library only): a DNS server on ADDRESS:53
answering every A query with ANSWER (and every other query with no records), and a TCP port
(ADDRESS:PORT) that accepts connections and closes them. Runs until killed.

    host_services.py ADDRESS ANSWER PORT
"""

import socket
import struct
import sys
import threading


def dns(address, answer):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Beside a wildcard listener on port 53 (the probe server's echo), which also sets it: the
    # more specific address takes the queries.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, 53))
    while True:
        query, peer = s.recvfrom(512)
        if len(query) < 12:
            continue
        ident = struct.unpack("!H", query[:2])[0]
        end = 12
        while end < len(query) and query[end]:
            end += query[end] + 1
        question = query[12:end + 5]
        qtype = struct.unpack("!H", query[end + 1:end + 3])[0] if end + 3 <= len(query) else 0
        records = b""
        if qtype == 1:
            records = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(answer)
        header = struct.pack("!HHHHHH", ident, 0x8180, 1, 1 if records else 0, 0, 0)
        s.sendto(header + question + records, peer)


def accept(address, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(64)
    while True:
        s.accept()[0].close()


if __name__ == "__main__":
    address, answer, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    threading.Thread(target=dns, args=(address, answer), daemon=True).start()
    accept(address, port)
