"""Real packets, measured: the probe server in the server namespace and the probe commands run
from the client's (probe.py beside this file, standard library only).

Every probe returns its parsed result or raises `ProbeFailed` saying what was missing: a probe
that crashed, printed nothing or left a target out is never read as "no replies".
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .system import SYSTEM_PYTHON, HarnessError, spawn, stop, wait_until
from .topology import Namespace, bracket

PROBE = Path(__file__).resolve().parent / "probe.py"


class ProbeFailed(HarnessError):
    """A probe that did not measure: the check that needed it fails with this."""


def _json(result, what: str) -> Any:
    if result.rc != 0:
        raise ProbeFailed(f"{what}: {result.describe()}")
    try:
        return json.loads(result.out)
    except ValueError:
        raise ProbeFailed(f"{what}: no JSON in its output: {result.out[:200]!r} {result.err[-300:]!r}") from None


class ProbeServer:
    """probe.py serve: UDP echo on 7 and 53, TCP echo on 22 and 53, a TCP sink (5001) and source
    (5002), a datagram counter (9000), controlled over a Unix socket that never crosses the
    shaped link."""

    def __init__(self, namespace: Namespace, work: Path, lifetime: int = 3600):
        self.namespace = namespace
        self.ctl = Path(work) / "probe.sock"
        self.log = Path(work) / "probe-server.log"
        self.lifetime = lifetime
        self.process: subprocess.Popen | None = None

    def start(self) -> "ProbeServer":
        """Starts the server and waits until its control socket answers."""
        self.ctl.unlink(missing_ok=True)
        with self.log.open("a") as log:
            # scripts/kernel-fault-test server-silent: the suite must notice a server that answers nothing.
            silent = ["--silent"] if os.environ.get("LC_FAULT") == "server-silent" else []
            self.process = spawn(self.namespace.argv("timeout", str(self.lifetime), SYSTEM_PYTHON, PROBE, "serve",
                                                     "--ctl", self.ctl, *silent), stdout=log, stderr=log)
        if not wait_until(self._ready, 30, 0.1):
            self.stop()
            raise HarnessError(f"the probe server did not start:\n{self.log.read_text()[-2000:]}")
        return self

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise HarnessError(f"the probe server exited {self.process.returncode}:\n{self.log.read_text()[-2000:]}")
        if not self.ctl.exists():
            return False
        try:
            return self.call({"op": "ping"}, timeout=5).get("ok") is True
        except ProbeFailed:
            # Bound but not yet listening (connection refused), or silent: `start` gives up
            # after its 30 s and says so.
            return False

    def call(self, request: dict, timeout: float = 120) -> dict:
        """One request on the control socket; ProbeFailed when it does not answer."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(str(self.ctl))
                f = s.makefile("rwb")
                f.write(json.dumps(request).encode() + b"\n")
                f.flush()
                line = f.readline()
        except OSError as error:
            raise ProbeFailed(f"the probe server's control socket: {error}") from None
        if not line:
            raise ProbeFailed("the probe server closed its control socket without a reply")
        return json.loads(line)

    def echoed(self) -> dict[str, int]:
        """What the echo servers have answered so far, per "udp/PORT" and "tcp/PORT"."""
        return self.call({"op": "echoed"}, timeout=10)["echoed"]

    def alive(self) -> bool:
        try:
            return self.process is not None and self.process.poll() is None and self.call({"op": "ping"}, 5).get("ok")
        except ProbeFailed:
            return False

    def stop(self) -> None:
        stop(self.process)
        self.process = None


@dataclass
class RTT:
    """Round trips to one target: sent, received, and the samples in ms."""

    target: str
    sent: int
    received: int
    samples_ms: list[float]
    median_ms: float | None
    min_ms: float | None
    echo_median_ms: float | None

    @property
    def all_answered(self) -> bool:
        return self.sent > 0 and self.received == self.sent


class Probes:
    """The probe commands, run in the client namespace against SERVER."""

    def __init__(self, namespace: Namespace, server: ProbeServer):
        self.namespace = namespace
        self.server = server

    def _run(self, timeout: float, *args: str | Path) -> Any:
        done = self.namespace.run(SYSTEM_PYTHON, PROBE, *args, timeout=timeout)
        return _json(done, f"probe {args[0]}")

    def rtt(self, targets: Sequence[str], rounds: int = 10, interval: float = 0.05, timeout: float = 1) -> dict[str, RTT]:
        """Round trips to each target (`udp:HOST:PORT`, `tcp:HOST:PORT` connect and echo,
        `tcpconnect:HOST:PORT`), interleaved."""
        args = [a for t in targets for a in ("--target", t)]
        limit = 30 + rounds * len(targets) * (interval + timeout * 2)
        doc = self._run(limit, "rtt", *args, "--rounds", str(rounds), "--interval", str(interval),
                        "--timeout", str(timeout))
        results = {}
        for item in doc:
            results[item["target"]] = RTT(item["target"], item["sent"], item["received"], item["samples_ms"],
                                          item.get("median_ms"), item.get("min_ms"), item.get("echo_median_ms"))
        missing = [t for t in targets if t not in results or results[t].sent != rounds]
        if missing:
            raise ProbeFailed(f"rtt: no result for {missing}")
        return results

    def oneway(self, host: str, direction: str = "both", rate: float = 50, duration: float = 3,
               **options: Any) -> dict[str, dict]:
        """One-way delays per direction (`up`, `down`) of a timestamped UDP stream to the server's
        counter: each direction's `sent`, `received`, `median_ms`, `min_ms`, `quantiles_ms` ..."""
        extra = [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", str(v))]
        doc = self._run(duration + 90, "oneway", "--host", host, "--ctl", self.server.ctl, "--dir", direction,
                        "--rate", str(rate), "--duration", str(duration), *extra)
        wanted = ("up", "down") if direction == "both" else (direction,)
        for d in wanted:
            if d not in doc or not doc[d].get("sent"):
                raise ProbeFailed(f"oneway {d} to {host}: nothing sent ({doc.get(d)})")
        return doc

    def stream(self, host: str, direction: str = "both", rate: float = 500, duration: float = 6,
               **options: Any) -> dict[str, dict]:
        """The packets of a timestamped UDP stream per direction (`up`, `down`), as they arrived:
        each direction's `sent` and `packets` ([sequence, sent ns, received ns] in arrival order,
        duplicates included), and the packets that arrived `altered` (`corrupted` down)."""
        extra = [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", str(v))]
        doc = self._run(duration + 90, "stream", "--host", host, "--ctl", self.server.ctl, "--dir", direction,
                        "--rate", str(rate), "--duration", str(duration), *extra)
        for d in (("up", "down") if direction == "both" else (direction,)):
            if d not in doc or not doc[d].get("sent") or "packets" not in doc[d]:
                raise ProbeFailed(f"stream {d} to {host}: nothing sent ({str(doc.get(d))[:200]})")
        return doc

    def loss(self, tasks: Sequence[str], count: int, gap: float = 0.001, grace: float | None = None) -> dict[str, int]:
        """Datagrams delivered of COUNT for each task (`up:HOST`, `down:HOST`): the server counts
        what arrives up, the client what arrives down. ProbeFailed when a sender could not send
        them all (a count of none delivered then says nothing about the link). GRACE: seconds
        the count waits after the last datagram (probe.py's default, 1.5, unless told)."""
        args = [a for t in tasks for a in ("--task", t)]
        if grace is not None:
            args += ["--grace", str(grace)]
        doc = self._run(60 + count * gap * len(tasks) * 3, "loss", "--ctl", self.server.ctl, "--count", str(count),
                        "--gap", str(gap), *args)
        received = {item["task"]: item["received"] for item in doc}
        if sorted(received) != sorted(tasks):
            raise ProbeFailed(f"loss: results for {sorted(received)}, asked {sorted(tasks)}")
        short = [f"{item['task']}: {item['sent']} of {count}" for item in doc if item["sent"] != count]
        if short:
            raise ProbeFailed(f"loss: the sender could not send every datagram ({', '.join(short)})")
        return received

    def throughput(self, direction: str, host: str, duration: float = 17, skip: float = 3, **options: Any) -> dict:
        """A TCP bulk transfer's rate on the link (`link_bps`, frames as the wire carries them)
        over a steady window, measured at the receiver."""
        extra = [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", str(v))]
        doc = self._run(duration + 90, "throughput", "--dir", direction, "--host", host, "--ctl", self.server.ctl,
                        "--duration", str(duration), "--skip", str(skip), *extra)
        if doc.get("link_bps") is None:
            raise ProbeFailed(f"throughput {direction} to {host}: no rate measured ({doc})")
        return doc

    def udprate(self, direction: str, host: str, bps: float, duration: float = 8, skip: float = 2,
                **options: Any) -> dict:
        """A shaped direction's rate under full-size UDP frames offered above it (`link_bps`
        per direction)."""
        extra = []
        for k, v in options.items():
            flag = f"--{k.replace('_', '-')}"
            extra += [flag] if v is True else [flag, str(v)]
        doc = self._run(duration + 90, "udprate", "--dir", direction, "--host", host, "--ctl", self.server.ctl,
                        "--bps", str(bps), "--duration", str(duration), "--skip", str(skip), *extra)
        for d in (("up", "down") if direction == "both" else (direction,)):
            part = doc[d] if direction == "both" else doc
            if part.get("link_bps") is None:
                raise ProbeFailed(f"udprate {d} to {host}: no rate measured ({part})")
        return doc

    def session(self, target: str, until: Path, wait: float = 300) -> subprocess.Popen:
        """A TCP echo connection held open until UNTIL exists, then echoed on once more; read its
        JSON with `session_result` (`connected`, `before`, `after`)."""
        process = subprocess.Popen(self.namespace.argv(SYSTEM_PYTHON, PROBE, "session", "--target", target,
                                                       "--until", until, "--wait", str(wait)),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return process

    @staticmethod
    def session_result(process: subprocess.Popen, timeout: float = 60) -> dict:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            raise ProbeFailed("session: no result in time") from None
        try:
            return json.loads(out)
        except ValueError:
            raise ProbeFailed(f"session: no JSON ({out[:200]!r} {err[-300:]!r})") from None

    def wait_session_open(self, process: subprocess.Popen, timeout: float = 30) -> None:
        """Blocks until the session says it is open."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if "session open" in line:
                return
            if not line and process.poll() is not None:
                break
        raise ProbeFailed("session: the connection did not open")


def udp_target(host: str, port: int = 7) -> str:
    return f"udp:{bracket(host)}:{port}"


def tcp_target(host: str, port: int = 22, kind: str = "tcp") -> str:
    return f"{kind}:{bracket(host)}:{port}"
