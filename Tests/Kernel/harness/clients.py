"""What the tests of linkcond's clients share: the tree each profile builds (to compare a tree
with, whole), the moment the kernel shows a profile, requests to the API as a user without
root, and what /proc says of a process (its group, its children)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from datetime import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .api import Reply
from .system import SYSTEM_PYTHON, HarnessError, as_member, as_stranger, run, stop, wait_until
from .tc import Device, bulk_netem, tree_signature


@dataclass(frozen=True)
class Reference:
    """A profile's tree as linkcondd builds it: its signature (harness/tc.py) and its uplink's
    bulk netem as tc prints it (a quick reading of which profile is in force)."""

    signature: str
    netem: str


def reference_trees(daemon, device: Device, names: Iterable[str]) -> dict[str, Reference]:
    """The tree each profile of NAMES builds, activated one after the other through the API, and
    "off" (nothing); every condition is off again at the end. Starts the daemon if it is not
    running."""
    if not daemon.running:
        daemon.start()
    references = {"off": Reference("none", "none")}
    for name in names:
        daemon.api.must(daemon.api.activate(name))
        references[name] = Reference(tree_signature(device), bulk_netem(device))
        if references[name].signature == "none" or references[name].netem == "none":
            raise HarnessError(f"{name} in force, but the kernel shows no tree of linkcond's")
    daemon.api.must(daemon.api.request("DELETE", "/v1/conditions?force=1"))
    if len({r.netem for r in references.values()}) != len(references):
        raise HarnessError(f"two of {list(references)} have the same uplink netem: they cannot be told apart")
    return references


def check_tree(check, name: str, device: Device, references: dict[str, Reference], profile: str) -> bool:
    """The whole tree on DEVICE is the one PROFILE built (REFERENCES from `reference_trees`)."""
    expected = references[profile].signature if profile in references else f"the tree of {profile}"
    return check.equal(name, expected, tree_signature(device))


def when_netem(device: Device, netem: str, limit: float, interval: float = 0.01) -> float | None:
    """The moment (time.monotonic()) by which the uplink's bulk netem, read over and over, reads
    NETEM (the end of the first reading that does), or None when it did not within LIMIT
    seconds. Each reading starts a `tc`: for the moment of a change to within a millisecond,
    `QdiscMonitor`."""
    deadline = time.monotonic() + limit
    while True:
        now = bulk_netem(device)
        seen = time.monotonic()
        if now == netem:
            return seen
        if seen >= deadline:
            return None
        time.sleep(interval)


class QdiscMonitor:
    """`tc -ts monitor` in DEVICE's namespace: each qdisc change the kernel announces, with the
    moment tc received it (wall clock, microseconds). Sharper than reading the tree over and
    over (each `tc` started under User-mode Linux takes 20-90 ms): the monitor waits, blocked,
    for the kernel's message.

        with QdiscMonitor(device) as monitor:
            ...
            moment = monitor.when_netem(netem_line, limit)   # time.time() scale, or None
    """

    def __init__(self, device: Device):
        self.device = device
        self.events: list[tuple[float, str]] = []
        self.process: subprocess.Popen | None = None
        self.reader: threading.Thread | None = None
        self.changed = threading.Condition()

    def __enter__(self) -> "QdiscMonitor":
        self.process = subprocess.Popen([*self.device.tc_argv(), "-ts", "monitor"], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                                        start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        # Listening once its netlink socket has joined the kernel's groups: tc opens the socket,
        # then binds it to them; a change between the two would never be announced to it.
        if not wait_until(self._listening, 10, 0.01):
            stop(self.process)
            raise HarnessError("tc monitor did not start listening")
        return self

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            raise HarnessError(f"tc monitor exited {self.process.returncode}")
        try:
            links = [os.readlink(f"/proc/{self.process.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{self.process.pid}/fd")]
            sockets = {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
            # /proc/net/netlink: sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode; Groups in hex.
            with open(f"/proc/{self.process.pid}/net/netlink") as table:
                rows = [line.split() for line in table.readlines()[1:]]
        except OSError:
            return False
        return any(len(row) >= 10 and row[-1] in sockets and int(row[3], 16) != 0 for row in rows)

    def _read(self) -> None:
        for line in self.process.stdout:
            if not line.startswith("["):
                continue
            stamp, _, text = line[1:].partition("] ")
            try:
                moment = datetime.fromisoformat(stamp).timestamp()
            except ValueError:
                continue
            with self.changed:
                self.events.append((moment, text.strip()))
                self.changed.notify_all()

    def __exit__(self, *exc) -> None:
        stop(self.process, timeout=5)

    def when_netem(self, netem: str, limit: float) -> float | None:
        """The moment the kernel announced the interface's uplink bulk netem as NETEM (a line of
        `bulk_netem`'s), time.time()'s scale; None when it did not within LIMIT seconds."""
        marker = f" dev {self.device.interface} "
        deadline = time.monotonic() + limit
        with self.changed:
            while True:
                for moment, text in self.events:
                    if " netem 7a10: " in f" {text}" and marker in f" {text} " and not text.startswith("deleted"):
                        if text.replace(f"dev {self.device.interface} ", "", 1) == netem:
                            return moment
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)


def seconds_until_netem(device: Device, netem: str, limit: float) -> float | None:
    """Seconds from now until the uplink's bulk netem reads NETEM, or None."""
    began = time.monotonic()
    seen = when_netem(device, netem, limit)
    return None if seen is None else seen - began


def status_without_time(status: dict) -> dict:
    """A status document less what changes by itself (`since`, a lease's time left)."""
    document = {k: v for k, v in status.items() if k != "since"}
    if isinstance(document.get("lease"), dict):
        document["lease"] = {k: v for k, v in document["lease"].items() if k != "secondsLeft"}
    return document


_REQUEST = r"""
import http.client, json, socket, sys
path, method, target, body = sys.argv[1:5]
connection = http.client.HTTPConnection("linkcond", timeout=30)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(path)
connection.sock = sock
headers = {"Content-Type": "application/json"} if body else {}
connection.request(method, target, body=body.encode() if body else None, headers=headers)
answer = connection.getresponse()
print(json.dumps({"status": answer.status, "headers": dict((k.lower(), v) for k, v in answer.getheaders()),
                  "body": answer.read().decode(errors="replace")}))
"""


def request_as(user: str, socket_path: Path, method: str, path: str, body: Any = None) -> Reply:
    """One request to the control socket made by a process of USER's ("member" or "stranger"):
    the daemon judges it by that process's credentials. HarnessError when no answer came."""
    wrap = {"member": as_member, "stranger": as_stranger}[user]
    text = json.dumps(body) if body is not None else ""
    done = run(wrap([SYSTEM_PYTHON, "-c", _REQUEST, str(socket_path), method, path, text]), timeout=60)
    if done.rc != 0:
        raise HarnessError(f"{method} {path} as {user}: {done.describe()}")
    try:
        answer = json.loads(done.out)
    except ValueError:
        raise HarnessError(f"{method} {path} as {user}: no answer read ({done.out[:200]!r})") from None
    return Reply(answer["status"], answer["headers"], answer["body"].encode())


def read_json(path: Path) -> Any | None:
    """PATH's JSON, or None when the file is missing, empty or not JSON (a check built on it then
    fails, saying it is missing)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class ProcStat:
    """The start of /proc/PID/stat: pid (comm) state ppid pgrp session."""

    pid: int
    comm: str
    state: str
    ppid: int
    pgrp: int
    session: int


def parse_stat(text: str) -> ProcStat | None:
    """A /proc/PID/stat line (the last of TEXT that is one), or None."""
    for line in reversed(text.strip().splitlines()):
        head, _, rest = line.rpartition(")")
        if not head or "(" not in head:
            continue
        fields = rest.split()
        pid, _, comm = head.partition(" (")
        try:
            return ProcStat(int(pid), comm, fields[0], int(fields[1]), int(fields[2]), int(fields[3]))
        except (ValueError, IndexError):
            continue
    return None


def proc_stat(pid: int) -> ProcStat | None:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None


def children(pid: int) -> list[ProcStat]:
    """The processes whose parent is PID, read from every /proc/N/stat."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat.ppid == pid:
                found.append(stat)
    return found
