"""Stand-ins for linkcondd on a Unix socket, and the `linkcond` client run against them as a user
would: what the client says when the other end is not a working daemon.

A FakeDaemon answers every connection as its behaviour says (a canned reply, silence, a hang-up,
an endless body), each connection on a thread of pytest's own process, and counts what it saw:
connections accepted and requests read, so that a test can tell "refused before connecting" from
"connected and got nothing".
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .system import BIN, HarnessError, as_stranger, spawn

#: How long the client waits for an answer before it gives up (ControlClient.defaultReplyTimeout).
REPLY_TIMEOUT = 30

STATUS = (b'{"active":false,"exemptions":[],"id":"eth0","ifb":"lc-eth0","interface":"eth0",'
          b'"isDefault":true,"since":"2026-01-01T00:00:00Z"}')
CONDITIONS = b'{"conditions":[' + STATUS + b']}'


def http(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    """A whole HTTP/1.1 answer that closes its connection."""
    return (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


Behaviour = Callable[["FakeDaemon", socket.socket], None]


class FakeDaemon:
    """Listens on PATH (mode MODE, owned by root) and answers each connection with BEHAVIOUR
    (see the functions below). A context manager: the socket and every connection are gone at
    its end."""

    def __init__(self, path: Path, behaviour: Behaviour, mode: int = 0o666):
        self.path = Path(path)
        self.behaviour = behaviour
        self.accepted = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stopping = threading.Event()
        if self.path.exists() or self.path.is_symlink():
            self.path.unlink()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        os.chmod(self.path, mode)
        self._listener.listen(16)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def __enter__(self) -> "FakeDaemon":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self._open.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self.behaviour(self, connection)
        except OSError:
            pass
        finally:
            with self._lock:
                if connection in self._open:
                    self._open.remove(connection)
            connection.close()

    def read_request(self, connection: socket.socket) -> bytes | None:
        """One request's head and stated body, or None when the client hung up first."""
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(4096)
            if not chunk:
                return None
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = connection.recv(4096)
            if not chunk:
                return None
            body += chunk
        with self._lock:
            self.requests += 1
        return head

    def wait_for_hang_up(self, connection: socket.socket) -> None:
        """Reads and drops whatever comes until the client closes its side, or `stop`."""
        while not self._stopping.is_set():
            if not connection.recv(4096):
                return

    def stop(self) -> None:
        self._stopping.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for connection in self._open:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(5)
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------- behaviours

def reply(data: bytes) -> Behaviour:
    """Reads the request, answers DATA, hangs up."""
    def behave(daemon: FakeDaemon, connection: socket.socket) -> None:
        if daemon.read_request(connection) is not None:
            connection.sendall(data)
    return behave


def reply_then_silence(data: bytes) -> Behaviour:
    """Reads the request, answers DATA, then says nothing more and keeps the connection open."""
    def behave(daemon: FakeDaemon, connection: socket.socket) -> None:
        if daemon.read_request(connection) is not None:
            connection.sendall(data)
            daemon.wait_for_hang_up(connection)
    return behave


def silence(daemon: FakeDaemon, connection: socket.socket) -> None:
    """Reads the request and never answers: a hung daemon."""
    if daemon.read_request(connection) is not None:
        daemon.wait_for_hang_up(connection)


def hang_up(daemon: FakeDaemon, connection: socket.socket) -> None:
    """Takes the connection and closes it at once, reading nothing."""


def endless(head: bytes, chunked: bool = False) -> Behaviour:
    """Reads the request, answers HEAD, then spaces (in chunks of 64 KiB, when CHUNKED) until
    the client stops reading."""
    def behave(daemon: FakeDaemon, connection: socket.socket) -> None:
        if daemon.read_request(connection) is None:
            return
        connection.sendall(head)
        spaces = b" " * 65536
        piece = b"10000\r\n" + spaces + b"\r\n" if chunked else spaces
        while not daemon._stopping.is_set():
            connection.sendall(piece)
    return behave


# ---------------------------------------------------------------- the client, as a user runs it

@dataclass
class Met:
    """How a run of the client against a fake daemon ended."""

    argv: Sequence[str]
    rc: int
    out: str
    err: str
    seconds: float
    #: Its largest resident memory, KiB.
    max_rss_kib: int
    #: Processes of its process group still there after it exited (should be none).
    left: list[int]

    @property
    def output(self) -> str:
        return self.out + self.err

    @property
    def timed_out(self) -> bool:
        return self.rc == 124

    def describe(self) -> str:
        return f"`{' '.join(self.argv)}` exited {self.rc} after {self.seconds:.2f} s: {self.err.strip()}"


def linkcond(socket_path: Path, *args: str, user: str = "root", limit: float = REPLY_TIMEOUT + 30) -> subprocess.Popen:
    """Starts `linkcond --socket SOCKET_PATH ARGS` as USER ("root" or "stranger", uid 65534 in no
    group) in a process group of its own; `met` waits for it."""
    argv = [str(BIN / "linkcond"), "--socket", str(socket_path), *args]
    if user == "stranger":
        argv = as_stranger(argv)
    elif user != "root":
        raise HarnessError(f"no such user for the client: {user}")
    process = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.limit = limit
    process.began = time.monotonic()
    return process


def met(process: subprocess.Popen) -> Met:
    """PROCESS (from `linkcond`) waited for until its end, or killed at its limit (rc 124), with
    what it said, how long it took, its peak memory and what it left behind in its group."""
    outputs: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda name, f: outputs.__setitem__(name, f.read()), args=(name, f), daemon=True)
               for name, f in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    deadline = process.began + process.limit
    rc, usage = None, None
    while rc is None:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            rc = os.waitstatus_to_exitcode(status)
            rc = rc if rc >= 0 else 128 - rc
        elif time.monotonic() >= deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, _, usage = os.wait4(process.pid, 0)
            rc = 124
        else:
            time.sleep(0.02)
    seconds = time.monotonic() - process.began
    process.returncode = rc
    left = _group_members(process.pid)
    for reader in readers:
        reader.join(5)
    return Met(process.args, rc, outputs.get("out", b"").decode(errors="replace"),
               outputs.get("err", b"").decode(errors="replace"), seconds, usage.ru_maxrss, left)


def meet(socket_path: Path, *args: str, user: str = "root", limit: float = REPLY_TIMEOUT + 30) -> Met:
    """`linkcond --socket SOCKET_PATH ARGS` as USER, to its end."""
    return met(linkcond(socket_path, *args, user=user, limit=limit))


def _group_members(group: int) -> list[int]:
    """The processes of process group GROUP still alive (zombies count: nobody reaped them)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group:
            members.append(int(entry))
    return members
