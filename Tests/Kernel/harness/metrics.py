"""The daemon's counters as its readers see them: a condition's directions in GET /v1/stats, the
samples of GET /metrics (Prometheus's text format) on the control socket or the TCP listener
(`--metrics-listen`, reached from the daemon's namespace with curl), and a connection flood on
that listener (harness/tcpflood.py, run as a user without rights).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .api import ControlAPI
from .system import SYSTEM_PYTHON, HarnessError, as_stranger, spawn
from .topology import Namespace

FLOODER = Path(__file__).resolve().parent / "tcpflood.py"
DIRECTIONS = (("uplink", "up"), ("downlink", "down"))
#: Each direction's counters, as GET /v1/stats names them and as GET /metrics does.
SERIES = {
    "bytes": ("linkcond_bytes_total", ""),
    "packets": ("linkcond_packets_total", ""),
    "droppedByLoss": ("linkcond_dropped_packets_total", ',reason="loss"'),
    "droppedByQueue": ("linkcond_dropped_packets_total", ',reason="queue"'),
    "queuedPackets": ("linkcond_queued_packets", ""),
    "queuedBytes": ("linkcond_queued_bytes", ""),
}


def counters(api: ControlAPI, condition_id: str) -> dict:
    """One condition's document of GET /v1/stats; HarnessError when it is not listed."""
    for c in api.stats()["conditions"]:
        if c["id"] == condition_id:
            return c
    raise HarnessError(f"GET /v1/stats lists no condition {condition_id}")


def grown(before: dict, after: dict, direction: str, field: str) -> int | None:
    """How much FIELD of DIRECTION (`uplink`, `downlink`) grew between two stats documents."""
    try:
        return after[direction][field] - before[direction][field]
    except (KeyError, TypeError):
        return None


def samples(text: str) -> dict[str, float]:
    """Prometheus text: every sample, "name{labels}" -> value (comments left out)."""
    found = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"(\S+(?:\{.*\})?)\s+(\S+)$", line)
        if match is None:
            raise HarnessError(f"not a sample line of Prometheus's text format: {line!r}")
        found[match.group(1)] = float(match.group(2))
    return found


def as_metrics(stats: dict) -> dict[str, float | None]:
    """What GET /metrics must say of one condition's stats document: its samples by name."""
    cid = stats["id"]
    expected = {}
    for direction, short in DIRECTIONS:
        for field, (name, extra) in SERIES.items():
            key = f'{name}{{condition="{cid}",direction="{short}"{extra}}}'
            expected[key] = stats.get(direction, {}).get(field)
    return expected


def picked(found: dict[str, float], keys) -> dict[str, float | None]:
    return {k: found.get(k) for k in keys}


@dataclass
class Fetched:
    status: int | None
    body: str
    seconds: float | None
    content_type: str | None = None


def fetch_tcp(namespace: Namespace, url: str, timeout: float = 10) -> Fetched:
    """GET URL with curl in NAMESPACE: status (None when nothing answered), body, seconds."""
    done = namespace.run("curl", "-s", "-m", str(timeout), "-o", "-", "-w",
                         "\n%{http_code} %{time_total} %{content_type}", url, timeout=timeout + 20)
    body, _, tail = done.out.rpartition("\n")
    parts = tail.split(" ", 2)
    status = int(parts[0]) if parts and parts[0].isdigit() and parts[0] != "000" else None
    seconds = float(parts[1]) if len(parts) > 1 else None
    return Fetched(status, body, seconds, parts[2] if len(parts) > 2 and parts[2] else None)


def start_flood(namespace: Namespace, address: str, out: Path, until: Path, connections: int = 4000,
                seconds: float = 60) -> subprocess.Popen:
    """harness/tcpflood.py as nobody in NAMESPACE against ADDRESS, until UNTIL exists; its summary
    goes to OUT (read it with `flood_result`)."""
    out.write_text("")
    out.chmod(0o666)
    argv = namespace.argv(*as_stranger([SYSTEM_PYTHON, FLOODER, "--connect", address, "--connections", str(connections),
                                        "--seconds", str(seconds), "--until", until, "--out", out]))
    return spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def flood_result(process: subprocess.Popen, out: Path, timeout: float = 60) -> dict:
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise HarnessError("the flood did not end in time") from None
    try:
        return json.loads(out.read_text())
    except ValueError:
        raise HarnessError(f"the flood wrote no summary (exit {process.returncode}): {err[-500:]!r}") from None
