"""The kernel's traffic-control state, read with `tc` and `ip` as a second opinion (the product
itself never runs them). Every reader raises `HarnessError` when it could not read: state that
could not be read never passes for a clean interface."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Iterable

from .system import HarnessError, run, wait_until
from .topology import Namespace

LINKCOND_HANDLES = ("7a00:", "7a02:", "7a10:", "7a11:", "7a20:")


@dataclass(frozen=True)
class Device:
    """Where a tree lives: an interface and its IFB, in a named namespace or a process's."""

    interface: str
    ifb: str
    namespace: Namespace | None = None
    pid: int | None = None

    def tc_argv(self) -> list[str]:
        if self.pid is not None:
            return ["nsenter", "-t", str(self.pid), "-n", "tc"]
        return ["tc", "-n", self.namespace.name] if self.namespace else ["tc"]

    def ip_argv(self) -> list[str]:
        if self.pid is not None:
            return ["nsenter", "-t", str(self.pid), "-n", "ip"]
        return ["ip", "-n", self.namespace.name] if self.namespace else ["ip"]

    def has_ifb(self) -> bool:
        """Whether the IFB exists, read from the namespace's device list rather than by asking tc
        for it (tc asked about a missing device makes the kernel run modprobe twice)."""
        if self.pid is not None:
            path = f"/proc/{self.pid}/net/dev"
            try:
                with open(path) as listing:
                    text = listing.read()
            except OSError as error:
                raise HarnessError(f"cannot read {path}: {error}") from None
            return any(line.split(":")[0].strip() == self.ifb for line in text.splitlines()[2:])
        if self.namespace is not None and self.namespace.anchor is not None:
            return self.namespace.has_device(self.ifb)
        return run([*self.ip_argv(), "link", "show", "dev", self.ifb]).rc == 0


def tc(device: Device, *args: str) -> str:
    """`tc ARGS` in DEVICE's namespace; HarnessError when tc fails."""
    return run([*device.tc_argv(), *args], timeout=30).ok().out


def _batch(device: Device, dev: str) -> str:
    """Every qdisc, class and filter linkcond could have on DEV, as tc prints them."""
    script = (f"qdisc show dev {dev}\nclass show dev {dev}\n"
              f"filter show dev {dev} parent 7a00:\nfilter show dev {dev} parent ffff:\n")
    # -force: a parent that is not there (no ingress when off) is an answer, not a stop.
    done = run([*device.tc_argv(), "-force", "-batch", "-"], input=script, timeout=30)
    if done.rc != 0 and not done.out:
        raise HarnessError(f"tc could not read {dev}: {done.describe()}")
    return done.out


_KERNEL_NUMBERED = [
    (re.compile(r" fh [0-9a-f:]+"), ""), (re.compile(r" order [0-9]+"), ""),
    (re.compile(r" key ht [0-9a-f]+ bkt [0-9a-f]+"), ""),
    (re.compile(r" index [0-9]+ ref [0-9]+ bind [0-9]+"), ""), (re.compile(r" (not_)?in_hw"), ""),
    (re.compile(r" direct_packets_stat [0-9]+"), ""),
]


def _objects(text: str, prefix: str) -> Iterable[str]:
    """tc's text as one line per object: a filter's continuation lines joined to it, the numbers
    the kernel gives by creation order (filter handles, hash tables, action indexes) left out,
    so that a rebuilt tree and a re-adopted one compare equal when they hold the same objects."""
    record = None
    lines: list[str] = []

    def emit(line: str) -> None:
        for pattern, replacement in _KERNEL_NUMBERED:
            line = pattern.sub(replacement, line)
        line = line.rstrip()
        if " ht divisor " not in line:
            lines.append(prefix + line)

    for line in text.splitlines():
        if line.startswith("qdisc noqueue 0: "):
            continue
        if line.startswith(("qdisc ", "class ")):
            if record is not None:
                emit(record)
                record = None
            emit(line)
        elif line.startswith("filter"):
            if record is not None:
                emit(record)
            record = line
        elif not line.strip():
            continue
        elif line[0] in " \t":
            if record is not None:
                record += " " + line.strip()
            else:
                emit(line.strip())
        else:
            if record is not None:
                emit(record)
                record = None
            emit(line)
    if record is not None:
        emit(record)
    return lines


def tree_text(device: Device) -> list[str]:
    """Every qdisc, class and filter linkcond could have on the interface and its IFB, one
    line per object, sorted; empty when there is none."""
    lines = list(_objects(_batch(device, device.interface), f"{device.interface}: "))
    if device.has_ifb():
        lines += _objects(_batch(device, device.ifb), "ifb: ")
    return sorted(lines)


def tree_signature(device: Device) -> str:
    """"none" when linkcond has nothing on the interface, else a digest of `tree_text`."""
    lines = tree_text(device)
    if not lines:
        return "none"
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()[:12]


def qdiscs(device: Device, dev: str | None = None, stats: bool = True) -> list[dict]:
    """`tc -j [-s] qdisc show dev DEV` (the interface unless told), parsed."""
    args = ["-j", *(["-s"] if stats else []), "qdisc", "show", "dev", dev or device.interface]
    text = tc(device, *args)
    try:
        return json.loads(text)
    except ValueError as error:
        raise HarnessError(f"tc's JSON did not parse ({error}): {text[:200]}") from None


def qdisc(device: Device, handle: str, dev: str | None = None) -> dict | None:
    """The qdisc with HANDLE on DEV (the interface unless told), or None."""
    for q in qdiscs(device, dev):
        if q.get("handle") == handle:
            return q
    return None


def bulk_netem(device: Device) -> str:
    """The uplink's bulk netem (7a10:) as tc prints it, "none" without one: a quick reading of
    which profile is in force."""
    for line in tc(device, "qdisc", "show", "dev", device.interface).splitlines():
        if " netem 7a10: " in f" {line}":
            return line.strip()
    return "none"


def snapshot(device: Device) -> str:
    """Everything a user could see of the interface: qdiscs, ingress filters, link details, IFB
    devices; HarnessError when any of it could not be read."""
    parts = [
        ("tc qdisc show dev", [*device.tc_argv(), "qdisc", "show", "dev", device.interface]),
        ("tc filter show ingress", [*device.tc_argv(), "filter", "show", "dev", device.interface, "ingress"]),
        ("ip -d link show dev", [*device.ip_argv(), "-d", "link", "show", "dev", device.interface]),
        ("ip link show type ifb", [*device.ip_argv(), "link", "show", "type", "ifb"]),
    ]
    text = []
    for title, argv in parts:
        done = run(argv, timeout=30)
        # ip names the peer's namespace by reading every namespace's id, and may complain about
        # one another test adds or deletes meanwhile: not a change to this interface.
        if done.rc != 0:
            raise HarnessError(f"could not read the interface: {done.describe()}")
        text.append(f"# {title}\n{done.out}")
    joined = "\n".join(text)
    joined = re.sub(r"direct_packets_stat [0-9]+", "direct_packets_stat N", joined)
    return re.sub(r"link-netns(id)? [^ ]+", "link-netns PEER", joined)


def same_as(check, name: str, expected: str, now: str) -> bool:
    """A check that the snapshot NOW is EXPECTED (`snapshot`'s text); their differences printed
    when not."""
    if now != expected:
        print(f"{name}: the interface differs:")
        print("".join(difflib.unified_diff(expected.splitlines(True), now.splitlines(True), "before", "now")))
    return check.true(name, now == expected, "identical" if now == expected else "differs (diff above)",
                      "the interface as before")

def ifb_bulk_total(device: Device) -> int | None:
    """Packets the IFB's bulk netem (7a10:) sent, dropped or holds; None without an IFB."""
    if not device.has_ifb():
        return None
    q = qdisc(device, "7a10:", device.ifb)
    if q is None:
        return None
    return q.get("packets", 0) + q.get("drops", 0) + q.get("qlen", 0)


def queued_packets(device: Device) -> int:
    """Packets waiting in every qdisc of the interface and its IFB."""
    total = sum(q.get("qlen", 0) for q in qdiscs(device))
    if device.has_ifb():
        total += sum(q.get("qlen", 0) for q in qdiscs(device, device.ifb))
    return total


def wait_drained(device: Device, limit: float = 60) -> None:
    """Until no queue on the interface or its IFB holds a packet: a transfer leaves a full queue
    behind it, which a slow link takes seconds to send."""
    if not wait_until(lambda: queued_packets(device) == 0, limit, 0.2):
        raise HarnessError(f"the queues still hold {queued_packets(device)} packets after {limit} s")
