"""`linkcond run --isolated` sandboxes as the tests see them: what a sandbox leaves in the
daemon's namespace (read from the kernel: an unreadable namespace is an error, never "nothing"),
the runs that make them, and a group member's lease on a namespace of its own choosing.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
from pathlib import Path
from typing import Sequence

from .daemon import Daemon
from .system import SYSTEM_PYTHON, HarnessError, as_member, wait_until
from .topology import Namespace

HOST_PREFIX = "lcsb"
TABLE_PREFIX = "linkcond_sandbox_"


def leftovers(namespace: Namespace) -> list[str]:
    """The sandboxes' objects in NAMESPACE: the host ends of their veth pairs (`lcsbN`) and their
    NAT tables (`linkcond_sandbox_N`), sorted; HarnessError when ip or nft could not read."""
    links = namespace.run("ip", "-o", "link", "show", timeout=30).ok().out
    tables = namespace.run("nft", "list", "tables", timeout=30).ok().out
    names = [line.split(":")[1].strip().split("@")[0] for line in links.splitlines() if line.count(":") >= 2]
    found = [n for n in names if n.startswith(HOST_PREFIX)]
    found += [line.split()[-1] for line in tables.splitlines() if line.split()[-1:] and line.split()[-1].startswith(TABLE_PREFIX)]
    return sorted(found)


def wait_no_leftovers(namespace: Namespace, limit: float = 30) -> list[str]:
    """LEFTOVERS once they are gone (within LIMIT seconds), else what is still there."""
    gone = wait_until(lambda: not leftovers(namespace), limit, 0.2)
    return [] if gone else leftovers(namespace)


def forwarding(namespace: Namespace, interface: str) -> str:
    """IPv4 forwarding on INTERFACE ("0" or "1"), read from the kernel."""
    return namespace.run("sysctl", "-n", f"net.ipv4.conf.{interface}.forwarding").ok().out.strip()


def sandboxes(daemon: Daemon) -> list[dict]:
    """The sandboxes' conditions the daemon lists."""
    return [c for c in daemon.api.conditions() if c.get("sandbox")]


def condition_summary(daemon: Daemon) -> list[str]:
    """Every condition as `ID=PROFILE` ("off" when none), sorted: what is left after a test."""
    return sorted(f"{c['id']}={c['profile']['name'] if c.get('active') and c.get('profile') else 'off'}"
                  for c in daemon.api.conditions())


def wait_listed(daemon: Daemon, count: int, limit: float = 120) -> list[dict] | None:
    """The sandboxes once COUNT of them are listed with their profile in force."""
    def listed():
        found = [c for c in sandboxes(daemon) if c.get("active")]
        return found if len(found) == count else None
    return wait_until(listed, limit, 0.2)


def command_pid(condition: dict) -> int:
    """The sandboxed command's process, from its condition's id (`pid/PID/eth0`)."""
    return int(condition["id"].split("/")[1])


def isolated_argv(daemon: Daemon, namespace: Namespace, profile: str, command: Sequence[str]) -> list[str]:
    """`linkcond run --isolated --profile PROFILE -- COMMAND` in NAMESPACE (as root)."""
    return namespace.argv(*daemon.client_argv("run", "--isolated", "--profile", profile, "--", *command))


def start_isolated(daemon: Daemon, namespace: Namespace, profile: str, command: Sequence[str],
                   err: Path | None = None, out: Path | None = None) -> subprocess.Popen:
    """A `run --isolated` started in the background (its own process: a signal reaches it)."""
    return subprocess.Popen(isolated_argv(daemon, namespace, profile, command), stdin=subprocess.DEVNULL,
                            stdout=out.open("w") if out else subprocess.DEVNULL,
                            stderr=err.open("w") if err else subprocess.DEVNULL)


def descendants(pid: int) -> list[int]:
    """PID's children, theirs and so on, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_pids(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


#: A lease request as `run --isolated` sends it, by the user it runs as: prints the error's code
#: or the first event of a granted lease, then holds the connection (and the lease) until killed.
LEASE_HOLDER = r"""
import json, socket, sys
path, pid, profile = sys.argv[1], sys.argv[2], sys.argv[3]
body = json.dumps({"profile": profile, "condition": "pid/%s/eth0" % pid, "sandbox": True}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.sendall(b"POST /v1/leases HTTP/1.1\r\nHost: linkcond\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body)
f = s.makefile("rb")
status = f.readline().split()
headers = {}
while True:
    line = f.readline().strip()
    if not line:
        break
    k, _, v = line.decode().partition(":")
    headers[k.strip().lower()] = v.strip()
if headers.get("transfer-encoding") == "chunked":
    text = b""
    while b"\n" not in text:
        size = int(f.readline().strip() or b"0", 16)
        if size == 0:
            break
        text += f.read(size)
        f.readline()
    first = text.split(b"\n")[0]
else:
    first = f.read(int(headers.get("content-length", "0")))
try:
    document = json.loads(first)
    print((document.get("error") or {}).get("code") or document.get("event"), flush=True)
except ValueError:
    print("unreadable %s %r" % (status, first[:200]), flush=True)
while s.recv(4096):
    pass
"""


def member_lease(daemon: Daemon, pid: int, profile: str = "Black Hole") -> subprocess.Popen:
    """A group member's sandbox lease on the namespace of PID, held while the process lives;
    its first line of output is the error code or "active"."""
    return subprocess.Popen(as_member([SYSTEM_PYTHON, "-c", LEASE_HOLDER, daemon.socket, str(pid), profile]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_answer(process: subprocess.Popen, limit: float = 60) -> str:
    """The lease holder's first line: an error code, "active", or what went wrong."""
    ready, _, _ = select.select([process.stdout], [], [], limit)
    if not ready:
        return f"no answer within {limit} s"
    line = process.stdout.readline().strip()
    if line:
        return line
    process.wait(5)
    return f"exited {process.returncode}: {process.stderr.read()[-300:]}"


def read_json(path: Path):
    """PATH's JSON, or HarnessError saying what was there."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        text = path.read_text()[-300:] if path.exists() else "no file"
        raise HarnessError(f"{path}: {error}: {text!r}") from None
