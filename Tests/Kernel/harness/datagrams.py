"""Which way packets go right now: datagrams the harness sends itself, up and down in each family,
seen either at linkcond's netem (shaped) or at the receiving socket with no linkcond netem on the
way (unshaped).

The sockets are the harness's own, opened once in the client and the server namespace (a thread
enters each namespace to open them), so that a probe starts no process: a test may probe after
each of a hundred daemon restarts. Each probe's datagrams carry a token of their own, so that
late ones of an earlier probe (a delayed link holds them for a while) are never counted.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import socket
import threading
from dataclasses import dataclass

from .system import HarnessError, run, wait_until
from .tc import Device
from .topology import Namespace, Topology

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
DIRECTIONS = ("up", "down")
FAMILIES = ("IPv4", "IPv6")


def socket_in(namespace: Namespace, family: int, address: str) -> socket.socket:
    """A UDP socket of NAMESPACE bound to ADDRESS (any free port), opened by a thread that
    entered the namespace (a socket keeps the namespace it was made in; the harness's own
    threads stay where they are)."""
    made: dict = {}

    def make() -> None:
        try:
            fd = os.open(f"/run/netns/{namespace.name}", os.O_RDONLY)
            try:
                if _libc.setns(fd, _CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"setns: {os.strerror(error)}")
            finally:
                os.close(fd)
            s = socket.socket(family, socket.SOCK_DGRAM)
            s.bind((address, 0))
            s.setblocking(False)
            made["socket"] = s
        except OSError as error:
            made["error"] = error

    thread = threading.Thread(target=make, name=f"setns-{namespace.name}")
    thread.start()
    thread.join()
    if "error" in made:
        raise HarnessError(f"could not open a UDP socket on {address} in {namespace.name}: {made['error']}")
    return made["socket"]


@dataclass
class Passage:
    """What DIRECTION's datagrams of one family did in one probe."""

    sent: int
    netem_before: int | None
    netem_after: int | None
    arrived: int

    @property
    def counted(self) -> int | None:
        """Datagrams linkcond's netem took (sent on, dropped or queued); None without a netem."""
        if self.netem_before is None or self.netem_after is None:
            return None
        return self.netem_after - self.netem_before

    @property
    def state(self) -> str:
        """"shaped": every datagram passed linkcond's netem of that direction (it counted at
        least as many: the namespaces' own MLD reports, IPv6 packets linkcond shapes too, pass it
        in the first seconds of a link); "unshaped": there is no such netem and every datagram
        reached the receiving socket; anything else says what was seen."""
        if self.counted is not None and self.counted >= self.sent:
            return "shaped"
        if self.netem_before is None and self.netem_after is None and self.arrived == self.sent:
            return "unshaped"
        netem = "no netem" if self.counted is None else f"netem counted {self.counted}"
        return f"unclear ({netem}, {self.arrived} of {self.sent} arrived)"


class DatagramPaths:
    """UDP sockets on the client's and the server's address of the topology's main link, each
    family: `up` datagrams go from the client to the server (the interface's egress, linkcond's
    uplink), `down` ones from the server to the client (the interface's ingress, redirected to
    the IFB: the downlink)."""

    def __init__(self, topo: Topology, device: Device):
        self.device = device
        self.ends = {}
        for family, kind, client, server in (("IPv4", socket.AF_INET, topo.c4, topo.s4),
                                             ("IPv6", socket.AF_INET6, topo.c6, topo.s6)):
            c, s = socket_in(topo.client, kind, client), socket_in(topo.server, kind, server)
            self.ends["up", family] = (c, s)
            self.ends["down", family] = (s, c)
        self.tokens = itertools.count(1)
        self.arrivals: dict[bytes, int] = {}

    def close(self) -> None:
        for sender, receiver in self.ends.values():
            sender.close()
            receiver.close()

    def netem_totals(self) -> dict[str, int | None]:
        """Per direction, the packets linkcond's bulk netem (7a10:) sent, dropped or holds; None
        where there is none (no such qdisc, or no IFB for the downlink). One `tc` for both."""
        devices = {"up": self.device.interface}
        if self.device.has_ifb():
            devices["down"] = self.device.ifb
        script = "".join(f"qdisc show dev {dev}\n" for dev in devices.values())
        done = run([*self.device.tc_argv(), "-s", "-j", "-batch", "-"], input=script, timeout=30)
        decoder, text, listings = json.JSONDecoder(), done.out.strip(), []
        try:
            while text:
                listing, end = decoder.raw_decode(text)
                listings.append(listing)
                text = text[end:].strip()
        except ValueError as error:
            raise HarnessError(f"tc's JSON did not parse ({error}): {done.describe()}") from None
        if done.rc != 0 or len(listings) != len(devices):
            raise HarnessError(f"tc could not read the qdiscs of {', '.join(devices.values())}: {done.describe()}")
        totals: dict[str, int | None] = {d: None for d in DIRECTIONS}
        for direction, listing in zip(devices, listings):
            for q in listing:
                if q.get("handle") == "7a10:":
                    totals[direction] = q.get("packets", 0) + q.get("drops", 0) + q.get("qlen", 0)
        return totals

    def _send(self, direction: str, family: str, token: bytes, count: int) -> None:
        sender, receiver = self.ends[direction, family]
        for i in range(count):
            sender.sendto(token + b" %d" % i, receiver.getsockname()[:2])

    def _arrived(self, direction: str, family: str, token: bytes) -> int:
        """Datagrams of TOKEN that reached DIRECTION's receiver so far (every datagram waiting
        there is read, each counted under its own token)."""
        _, receiver = self.ends[direction, family]
        while True:
            try:
                data = receiver.recv(2048)
            except BlockingIOError:
                break
            key = data.rsplit(b" ", 1)[0]
            self.arrivals[key] = self.arrivals.get(key, 0) + 1
        return self.arrivals.get(token, 0)

    def passages(self, count: int = 3, limit: float = 5) -> dict[tuple[str, str], Passage]:
        """COUNT datagrams up and COUNT down, one family after the other (linkcond's netems count
        packets of both families together), each direction and family: where they went. Waits
        until each direction's have all arrived or been counted at the netem, at most LIMIT
        seconds (a liveness limit: Slow Net's 100 ms at 32 kbit/s takes them 0.2 s)."""
        result = {}
        before = self.netem_totals()
        for family in FAMILIES:
            probe = next(self.tokens)
            tokens = {d: b"lc-probe %d %s %s" % (probe, family.encode(), d.encode()) for d in DIRECTIONS}
            for direction in DIRECTIONS:
                self._send(direction, family, tokens[direction], count)

            def settled() -> bool:
                # A datagram that arrived has left any netem on its way: tc is asked only about
                # those still out.
                out = [d for d in DIRECTIONS if self._arrived(d, family, tokens[d]) < count]
                if not out:
                    return True
                now = self.netem_totals()
                return all(now[d] is not None and before[d] is not None and now[d] - before[d] >= count for d in out)

            wait_until(settled, limit, 0.05)
            after = self.netem_totals()
            for d in DIRECTIONS:
                result[d, family] = Passage(count, before[d], after[d], self._arrived(d, family, tokens[d]))
            before = after
        return result
