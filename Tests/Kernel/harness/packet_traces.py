"""Packet traces as Wireshark's own readers see them: tshark's fields for each packet
(direction, interface, comment, ICMP echoes of both families, addresses), capinfos, and the
statistics block read here (tshark shows none of its counts)."""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .system import as_stranger


@dataclass
class Packet:
    number: int
    seconds: float
    interface: str
    direction: str  # "in", "out" or ""
    comment: str
    family: str  # "IPv4", "IPv6" or ""
    kind: str  # "request", "reply" or ""
    sequence: int | None
    #: Source and destination, when it is an IP packet (an ARP packet's: the addresses it asks and tells of).
    addresses: tuple[str, ...] = ()


@dataclass
class Trace:
    packets: list[Packet] = field(default_factory=list)
    stderr: str = ""
    rc: int = 0

    def echoes(self, family: str, kind: str, direction: str) -> list[Packet]:
        return [p for p in self.packets if p.family == family and p.kind == kind and p.direction == direction]

    @property
    def notes(self) -> list[Packet]:
        return [p for p in self.packets if p.interface == "linkcond"]


#: The readers run as nobody with no home of their own: root's (whose HOME setpriv keeps) may
#: hold a Wireshark configuration nobody cannot read, which tshark then complains of.
READER_ENVIRONMENT = ("env", "HOME=/nonexistent", "XDG_CONFIG_HOME=/nonexistent")

FIELDS = ("frame.number", "frame.time_epoch", "frame.interface_name", "frame.packet_flags_direction", "frame.comment",
          "icmp.type", "icmp.seq", "icmpv6.type", "icmpv6.echo.sequence_number", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
          "arp.src.proto_ipv4", "arp.dst.proto_ipv4")


def read_trace(path: Path | str, stdin: bytes | None = None) -> Trace:
    """PATH (or STDIN with '-') as tshark reads it, as an unprivileged user (as root tshark
    warns of being root, which is not about the file)."""
    result = subprocess.run(as_stranger([*READER_ENVIRONMENT, "tshark", "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f",
                                         *[a for f in FIELDS for a in ("-e", f)]]),
                            input=stdin, capture_output=True, timeout=120)
    trace = Trace(stderr=result.stderr.decode(errors="replace"), rc=result.returncode)
    for line in result.stdout.decode(errors="replace").splitlines():
        values = (line.split("\t") + [""] * len(FIELDS))[:len(FIELDS)]
        number, seconds, interface, flags, comment, v4type, v4seq, v6type, v6seq, src4, dst4, src6, dst6, arp_src, arp_dst = values
        direction = {"0x00000001": "in", "0x00000002": "out"}.get(flags, "")
        family, kind, sequence = "", "", None
        if v4type in ("8", "0"):
            family, kind, sequence = "IPv4", "request" if v4type == "8" else "reply", int(v4seq) if v4seq else None
        elif v6type in ("128", "129"):
            family, kind, sequence = "IPv6", "request" if v6type == "128" else "reply", int(v6seq) if v6seq else None
        addresses = tuple(a for a in (src4 or src6 or arp_src, dst4 or dst6 or arp_dst) if a)
        trace.packets.append(Packet(int(number), float(seconds), interface, direction, comment, family, kind, sequence, addresses))
    return trace


def capinfos(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(as_stranger([*READER_ENVIRONMENT, "capinfos", str(path)]), capture_output=True, text=True, timeout=60)


def statistics(path: Path) -> dict:
    """The first interface's statistics block (pcapng, little-endian as linkcond writes it):
    isb_ifrecv, isb_ifdrop (the condition's drops), isb_osdrop (the capture's), isb_usrdeliv,
    its comment."""
    data = path.read_bytes()
    offset, found = 0, {}
    while offset + 12 <= len(data):
        kind, length = struct.unpack_from("<II", data, offset)
        if length < 12 or offset + length > len(data):
            break
        if kind == 5:
            position = offset + 20
            while position + 4 <= offset + length - 4:
                code, size = struct.unpack_from("<HH", data, position)
                if code == 0:
                    break
                value = data[position + 4:position + 4 + size]
                names = {1: "comment", 4: "received", 5: "condition_drops", 7: "capture_drops", 8: "delivered"}
                if code in names:
                    found[names[code]] = value.decode(errors="replace") if code == 1 else struct.unpack("<Q", value)[0]
                position += 4 + (size + 3) // 4 * 4
            return found
        offset += length
    return found


def gaps_ms(trace: Trace, family: str, after: float = 0.0, before: float = float("inf")) -> list[float]:
    """Each echo's reply against its request in the trace (ms), for requests between AFTER and
    BEFORE: the first reply with the request's sequence number after it (two pings in a trace
    number their echoes alike)."""
    replies = trace.echoes(family, "reply", "in")
    gaps = []
    for request in trace.echoes(family, "request", "out"):
        if not after < request.seconds < before:
            continue
        reply = next((r for r in replies if r.sequence == request.sequence and r.seconds >= request.seconds), None)
        if reply is not None:
            gaps.append(round((reply.seconds - request.seconds) * 1000, 2))
    return gaps
