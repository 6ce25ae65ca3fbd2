"""Kinds of target besides the daemon's own interface: a second link of the client, a container's
network namespace (held by one process, reached by its PID) and a named one (`ip netns`); the
conditions' list as "id=profile"; and one-way delays measured per target against that target's
own unshaped delays.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .api import ControlAPI
from .system import HarnessError, Result, run, spawn, stop, wait_until
from .tc import Device, qdiscs
from .topology import Link, Namespace


class ProcessNamespace:
    """A network namespace that nothing but one process holds, as a container runtime makes one
    (`unshare --net sleep`): named by that process's PID. Quacks like `Namespace` for `Link` and
    `Probes` (`name`, `argv`, `run`, `ip`)."""

    def __init__(self, lifetime: int = 900):
        self.lifetime = lifetime
        self.process: subprocess.Popen | None = None

    def start(self) -> "ProcessNamespace":
        self.process = spawn(["unshare", "--net", "sleep", str(self.lifetime)])
        mine = os.readlink("/proc/self/ns/net")
        if not wait_until(lambda: _netns_of(self.process.pid) not in (None, mine), 10, 0.05):
            self.stop()
            raise HarnessError("unshare --net did not make a namespace of its own")
        self.ip("link", "set", "lo", "up")
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise HarnessError("the container is not running")
        return self.process.pid

    @property
    def name(self) -> str:
        """What `ip link ... netns` takes: the PID."""
        return str(self.pid)

    @property
    def netns(self) -> str | None:
        return _netns_of(self.pid)

    def argv(self, *argv: str | Path) -> list[str]:
        return ["nsenter", "-t", str(self.pid), "-n", *map(str, argv)]

    def run(self, *argv: str | Path, timeout: float = 60, input: str | None = None) -> Result:
        return run(self.argv(*argv), timeout=timeout, input=input)

    def ip(self, *args: str) -> Result:
        return self.run("ip", *args).ok()

    def has_device(self, device: str) -> bool:
        path = f"/proc/{self.pid}/net/dev"
        try:
            text = Path(path).read_text()
        except OSError as error:
            raise HarnessError(f"cannot read {path}: {error}") from None
        return any(line.split(":")[0].strip() == device for line in text.splitlines()[2:])

    def joiner(self) -> subprocess.Popen:
        """A second process in the namespace (a `docker exec`), running until stopped."""
        process = spawn(self.argv("sleep", str(self.lifetime)))
        if not wait_until(lambda: _netns_of(process.pid) == self.netns, 10, 0.05):
            stop(process, signal.SIGKILL)
            raise HarnessError("nsenter did not join the container's namespace")
        return process

    def stop(self, sig: int = signal.SIGKILL) -> None:
        stop(self.process, sig)
        self.process = None


def _netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def named_namespace(name: str) -> Namespace:
    """A namespace made with `ip netns add` and nothing living in it: `ip netns del` ends it."""
    run(["ip", "netns", "del", name])
    run(["ip", "netns", "add", name]).ok()
    namespace = Namespace(name)
    namespace.ip("link", "set", "lo", "up")
    return namespace


def link_to_server(near, server: Namespace, number: int, letter: str, subnet: int) -> Link:
    """A veth pair from NEAR (a namespace or a container) to the server's namespace:
    veth-LETTER-N in NEAR with 10.SUBNET.N.1 and fdSUBNET:N::1, its peer in the server's."""
    return Link(near, server, f"veth-{letter}{number}", f"veth-{letter}s{number}", f"10.{subnet}.{number}.1",
                f"10.{subnet}.{number}.2", f"fd{subnet}:{number}::1", f"fd{subnet}:{number}::2").up()


def root_and_ingress(device: Device) -> list[str]:
    """The root and the ingress qdisc of the device's interface, as "kind handle"."""
    return [f"{q['kind']} {q['handle']}" for q in qdiscs(device, stats=False)
            if q.get("root") or q.get("kind") == "ingress"]


def ifindex(device: Device, name: str) -> int | None:
    """The interface index of NAME in the device's namespace, None when it does not exist."""
    done = run([*device.ip_argv(), "-o", "link", "show", "dev", name])
    if done.rc != 0:
        return None
    return int(done.out.split(":", 1)[0])


# ---------------------------------------------------------------- the conditions' list

def condition_names(api: ControlAPI) -> str:
    """Every condition as "id=profile" ("off" when none is in force), in the daemon's order."""
    return " ".join(f"{c['id']}={profile_name(c)}" for c in api.conditions())


def profile_name(condition: dict) -> str:
    profile = condition.get("profile") if condition.get("active", True) else None
    return (profile or {}).get("name") or "off"


def condition_profile(api: ControlAPI, condition_id: str) -> str:
    """The profile in force on CONDITION_ID, "off" when it is not listed or off."""
    for c in api.conditions():
        if c["id"] == condition_id:
            return profile_name(c)
    return "off"


def wait_listed(api: ControlAPI, expected: str, limit: float) -> float | None:
    """Seconds until the list of conditions reads EXPECTED, None when not within LIMIT."""
    began = time.monotonic()
    if wait_until(lambda: condition_names(api) == expected, limit, 0.2):
        return time.monotonic() - began
    return None
