"""Network namespaces and veth links: the client and server "hosts" the suite shapes between.

A `Topology` is numbered: each test module takes a number of its own, so that its namespaces,
links, addresses and IFB devices never meet another module's, whichever VM runs them.

    client namespace lc-cliN  veth-cN 10.77.N.1/24 fd77:N::1/64  (the daemon shapes this end)
    server namespace lc-srvN  veth-sN 10.77.N.2/24 fd77:N::2/64
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .system import HarnessError, Result, run, spawn, stop, wait_until

#: The kernel modules the suite's trees and topologies need.
MODULES = ("veth", "sch_netem", "sch_htb", "sch_ingress", "sch_tbf", "cls_u32", "cls_flower", "act_mirred",
           "ifb", "8021q", "nf_tables")


def load_modules() -> None:
    """Loads what the tests use, IFB without its two default devices."""
    run(["modprobe", "ifb", "numifbs=0"]).ok()
    run(["modprobe", "-a", *MODULES]).ok()


class Namespace:
    """A named network namespace (`ip netns`), with a process living in it so that its counters
    (/proc/PID/net/...) can be read without starting one."""

    def __init__(self, name: str):
        self.name = name
        self.anchor: subprocess.Popen | None = None

    def add(self) -> "Namespace":
        run(["ip", "netns", "del", self.name])
        run(["ip", "netns", "add", self.name]).ok()
        self.anchor = spawn(["ip", "netns", "exec", self.name, "sleep", "infinity"])
        self.ip("link", "set", "lo", "up")
        return self

    def delete(self) -> None:
        stop(self.anchor)
        self.anchor = None
        for pid in self.pids():
            run(["kill", "-KILL", str(pid)])
        run(["ip", "netns", "del", self.name])

    def pids(self) -> list[int]:
        listed = run(["ip", "netns", "pids", self.name])
        return [int(p) for p in listed.out.split()] if listed.rc == 0 else []

    def argv(self, *argv: str | Path) -> list[str]:
        """ARGV run in this namespace."""
        return ["ip", "netns", "exec", self.name, *map(str, argv)]

    def run(self, *argv: str | Path, timeout: float = 60, input: str | None = None) -> Result:
        return run(self.argv(*argv), timeout=timeout, input=input)

    def ip(self, *args: str) -> Result:
        """`ip -n NAME ARGS`, which must succeed."""
        return run(["ip", "-n", self.name, *args]).ok()

    def tc(self, *args: str, timeout: float = 30) -> Result:
        """`tc -n NAME ARGS`, whatever its outcome."""
        return run(["tc", "-n", self.name, *args], timeout=timeout)

    def proc_net(self, name: str) -> str:
        """/proc/net/NAME as this namespace has it, read through its anchor."""
        if self.anchor is None:
            raise HarnessError(f"namespace {self.name} has no anchor process")
        return Path(f"/proc/{self.anchor.pid}/net/{name}").read_text()

    def has_device(self, device: str) -> bool:
        """Whether DEVICE exists here, read without asking tc for it (tc asked about a device that
        does not exist falls back to an ioctl for which the kernel runs modprobe twice)."""
        return any(line.split(":")[0].strip() == device for line in self.proc_net("dev").splitlines()[2:])

    def udp_no_ports(self) -> tuple[int, int]:
        """Datagrams this namespace's UDP found no socket for: IPv4, IPv6."""
        v4 = v6 = None
        rows = [line.split() for line in self.proc_net("snmp").splitlines() if line.startswith("Udp:")]
        if len(rows) == 2:
            v4 = int(dict(zip(rows[0][1:], rows[1][1:]))["NoPorts"])
        for line in self.proc_net("snmp6").splitlines():
            key, _, value = line.partition(" ")
            if key == "Udp6NoPorts":
                v6 = int(value)
        if v4 is None or v6 is None:
            raise HarnessError(f"no UDP counters read in namespace {self.name}")
        return v4, v6


@dataclass
class Link:
    """A veth pair from one namespace to another, addressed on both ends, without offloads (the
    shaping then sees packets as a wire would carry them)."""

    near: Namespace
    far: Namespace
    near_if: str
    far_if: str
    near4: str
    far4: str
    near6: str
    far6: str

    def up(self) -> "Link":
        run(["ip", "link", "add", self.near_if, "netns", self.near.name, "type", "veth",
             "peer", "name", self.far_if, "netns", self.far.name]).ok()
        self.near.ip("addr", "add", f"{self.near4}/24", "dev", self.near_if)
        self.far.ip("addr", "add", f"{self.far4}/24", "dev", self.far_if)
        self.near.ip("addr", "add", f"{self.near6}/64", "dev", self.near_if, "nodad")
        self.far.ip("addr", "add", f"{self.far6}/64", "dev", self.far_if, "nodad")
        for ns, dev in ((self.near, self.near_if), (self.far, self.far_if)):
            ns.run("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off").ok()
            ns.ip("link", "set", dev, "up")
        if not wait_until(lambda: self._both_up(), 10, 0.05):
            raise HarnessError(f"link {self.near_if}/{self.far_if} did not come up")
        return self

    def _both_up(self) -> bool:
        return all("state UP" in ns.run("ip", "link", "show", dev).out
                   for ns, dev in ((self.near, self.near_if), (self.far, self.far_if)))

    @property
    def ifb(self) -> str:
        """The IFB device linkcondd makes for this link's downlink: `lc-` + the interface's name."""
        return ("lc-" + self.near_if)[:15]


class Topology:
    """Client and server namespaces joined by one link, numbered N (0 to 99): see the module's
    doc comment. More links between the two take `add_link`."""

    def __init__(self, number: int):
        if not 0 <= number <= 99:
            raise ValueError("a topology's number is 0 to 99")
        self.number = number
        self.client = Namespace(f"lc-cli{number}")
        self.server = Namespace(f"lc-srv{number}")
        self.link = Link(self.client, self.server, f"veth-c{number}", f"veth-s{number}",
                         f"10.77.{number}.1", f"10.77.{number}.2", f"fd77:{number}::1", f"fd77:{number}::2")
        self.links = [self.link]
        self.extra_namespaces: list[Namespace] = []

    # The main link's names, as most tests use them.
    @property
    def interface(self) -> str:
        return self.link.near_if

    @property
    def ifb(self) -> str:
        return self.link.ifb

    @property
    def c4(self) -> str:
        return self.link.near4

    @property
    def s4(self) -> str:
        return self.link.far4

    @property
    def c6(self) -> str:
        return self.link.near6

    @property
    def s6(self) -> str:
        return self.link.far6

    def up(self) -> "Topology":
        self.down()
        self.client.add()
        self.server.add()
        self.link.up()
        return self

    def down(self) -> None:
        for ns in [*self.extra_namespaces, self.client, self.server]:
            ns.delete()
        self.extra_namespaces.clear()

    def add_link(self, letter: str, subnet: int) -> Link:
        """A second link between client and server: veth-LETTER-N / veth-LETTER'-N with
        10.SUBNET.N.1/.2 and fdSUBNET:N::1/::2 (SUBNET 78 to 99)."""
        n = self.number
        link = Link(self.client, self.server, f"veth-{letter}{n}", f"veth-{letter}s{n}",
                    f"10.{subnet}.{n}.1", f"10.{subnet}.{n}.2", f"fd{subnet}:{n}::1", f"fd{subnet}:{n}::2").up()
        self.links.append(link)
        return link

    def namespace(self, name: str) -> Namespace:
        """Another namespace this topology owns (deleted with it): NAME with the topology's number."""
        ns = Namespace(f"{name}{self.number}").add()
        self.extra_namespaces.append(ns)
        return ns

    def add_server_address(self, last_byte: int) -> tuple[str, str]:
        """Another address of the server on the main link (another "server" to a peer condition):
        10.77.N.LAST and fd77:N::LAST."""
        v4, v6 = f"10.77.{self.number}.{last_byte}", f"fd77:{self.number}::{last_byte:x}"
        self.server.ip("addr", "add", f"{v4}/24", "dev", self.link.far_if)
        self.server.ip("addr", "add", f"{v6}/64", "dev", self.link.far_if, "nodad")
        return v4, v6


def bracket(host: str) -> str:
    """HOST as a URL or probe target writes it: IPv6 in brackets."""
    return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host


def families(v4: str, v6: str) -> Sequence[tuple[str, str]]:
    """(label, address) for each family, for tests that check both."""
    return (("IPv4", v4), ("IPv6", v6))
