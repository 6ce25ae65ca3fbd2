"""Processes, users and waiting: what every part of the harness runs things with.

Everything here raises or returns a result that says what happened; nothing turns a failure
into an empty answer. A command that could not run, or ran out of time, is a result with that
said, so that a check built on it fails with the reason.
"""

from __future__ import annotations

import grp
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

HARNESS = Path(__file__).resolve().parent
KERNEL_TESTS = HARNESS.parent
REPO = KERNEL_TESTS.parent.parent
#: The binaries under test: `$LINKCOND_BIN`, else the debug build.
BIN = Path(os.environ.get("LINKCOND_BIN") or REPO / ".build" / "debug")
SHIPPED_PROFILES = REPO / "profiles"
SHIPPED_SCENARIOS = REPO / "scenarios"
SHIPPED_TRACES = REPO / "traces"
#: The system's Python, for what a user without rights runs (a version manager's under /root is
#: out of their reach).
SYSTEM_PYTHON = "/usr/bin/python3"

#: The unprivileged identity the suite acts as: nobody, with or without the daemon's group.
NOBODY = 65534
GROUP = "linkcond"


def in_vm() -> bool:
    """Whether this is a test VM of scripts/vm-run (User-mode Linux or virtme-ng), where the
    suite may change the network."""
    try:
        cmdline = Path("/proc/cmdline").read_text()
    except OSError:
        return False
    return " lc.job=" in f" {cmdline}" or "virtme" in cmdline


class HarnessError(Exception):
    """The harness could not do what a test needs (a command failed, a daemon did not start):
    the test errors with this message rather than checking anything."""


@dataclass
class Result:
    """A finished command: its exit status (124 when its time ran out), stdout and stderr."""

    argv: Sequence[str]
    rc: int
    out: str
    err: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.rc == 124

    @property
    def output(self) -> str:
        """stdout and stderr together, as a user at a terminal sees them."""
        return self.out + self.err

    def describe(self) -> str:
        text = " ".join(shlex.quote(str(a)) for a in self.argv)
        tail = (self.err or self.out).strip().splitlines()[-3:]
        return f"`{text}` exited {self.rc}" + (f": {' / '.join(tail)}" if tail else "")

    def ok(self) -> "Result":
        """This result, or HarnessError when the command failed."""
        if self.rc != 0:
            raise HarnessError(self.describe())
        return self


def run(argv: Sequence[str | os.PathLike], *, timeout: float = 60, input: str | bytes | None = None,
        env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None) -> Result:
    """Runs ARGV to its end, or until TIMEOUT seconds (then killed, rc 124), and returns what it
    said. A program that does not exist is rc 127, as a shell says it."""
    argv = [str(a) for a in argv]
    began = time.monotonic()
    binary = isinstance(input, bytes)
    try:
        done = subprocess.run(argv, input=input, capture_output=True, timeout=timeout, env=env,
                              cwd=cwd, text=not binary, errors=None if binary else "replace")
        out, err = done.stdout, done.stderr
        if binary:
            out, err = out.decode(errors="replace"), err.decode(errors="replace")
        rc = done.returncode if done.returncode >= 0 else 128 - done.returncode
    except subprocess.TimeoutExpired as expired:
        rc = 124
        out = _text(expired.stdout)
        err = _text(expired.stderr) + f"\n(killed after {timeout} s)"
    except FileNotFoundError as missing:
        rc, out, err = 127, "", str(missing)
    return Result(argv, rc, out, err, time.monotonic() - began)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def spawn(argv: Sequence[str | os.PathLike], *, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
          env: Mapping[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """Starts ARGV in the background, in a process group of its own (so that `stop` reaches its
    children too)."""
    return subprocess.Popen([str(a) for a in argv], stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True, **kwargs)


def stop(process: subprocess.Popen | None, sig: int = signal.SIGTERM, timeout: float = 15) -> int | None:
    """Ends a process `spawn` started and everything in its group: SIG, then SIGKILL after
    TIMEOUT. Its exit status (128 + N for signal N), or None when there was no process."""
    if process is None:
        return None
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    rc = process.returncode
    return rc if rc >= 0 else 128 - rc


T = TypeVar("T")


def wait_until(probe: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """PROBE's first true answer within TIMEOUT seconds, else None (PROBE is asked at least once)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def timed_until(probe: Callable[[], object], timeout: float, interval: float = 0.05) -> float | None:
    """Seconds until PROBE first answers true, or None when it did not within TIMEOUT."""
    began = time.monotonic()
    return time.monotonic() - began if wait_until(probe, timeout, interval) else None


def group_id() -> int:
    """The daemon's group, made if this machine has none (the VM's /etc is a throwaway overlay)."""
    try:
        return grp.getgrnam(GROUP).gr_gid
    except KeyError:
        run(["groupadd", "-f", GROUP]).ok()
        return grp.getgrnam(GROUP).gr_gid


def as_member(argv: Sequence[str | os.PathLike]) -> list[str]:
    """ARGV as uid 65534 in the daemon's group: a user who may change conditions."""
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", f"--groups={group_id()}", *map(str, argv)]


def as_stranger(argv: Sequence[str | os.PathLike]) -> list[str]:
    """ARGV as uid 65534 in no group: a user who may read, not change."""
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *map(str, argv)]


def writable_by_anyone(path: Path) -> Path:
    """PATH, an empty file anyone may write (for output of a process that runs as nobody)."""
    path.write_text("")
    path.chmod(0o666)
    return path


def rss_kib(pid: int) -> int | None:
    """A process's resident memory in KiB, or None when it cannot be read (no such process)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def fd_count(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def thread_names(pid: int) -> list[str] | None:
    """The names of a process's threads, or None when none could be read."""
    names = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                names.append(Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())
            except OSError:
                continue
    except OSError:
        return None
    return names or None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
