"""What a failure's tests share: a client's attempts (connections.py `tries` and `lookup`) and
what they got, their times, and linkcond's failure tables as nft lists them."""

from __future__ import annotations

import json
from pathlib import Path

from harness.system import SYSTEM_PYTHON

CONNECTIONS = Path(__file__).resolve().parent / "connections.py"


def tries(namespace, host: str, port: int, proto: str = "tcp", count: int = 20, timeout: float = 5,
          recverr: bool = False, blocking: bool = False) -> list[dict]:
    """COUNT attempts from NAMESPACE (connections.py tries): each one's result and milliseconds."""
    result = namespace.run(SYSTEM_PYTHON, CONNECTIONS, "tries", "--host", host, "--port", str(port), "--proto", proto,
                           "--count", str(count), "--timeout", str(timeout), *(["--recverr"] if recverr else []),
                           *(["--blocking"] if blocking else []),
                           timeout=60 + count * timeout)
    return json.loads(result.out) if result.rc == 0 else [{"result": f"probe failed: {result.output}", "ms": None}]


def curl_exit(namespace, host: str, port: int, timeout: float = 5) -> int:
    """curl's exit status for http://HOST:PORT/ from NAMESPACE (6: couldn't resolve the host, 7:
    couldn't connect, 28: timed out, 56: failure receiving), as an app that shells out sees it."""
    where = f"[{host}]" if ":" in host else host
    return namespace.run("curl", "-s", "-o", "/dev/null", "-m", str(timeout), f"http://{where}:{port}/", timeout=timeout + 30).rc


def lookups(namespace, name: str, count: int = 20) -> list[dict]:
    """COUNT getaddrinfo calls for NAME from NAMESPACE: what each got, and its milliseconds."""
    result = namespace.run(SYSTEM_PYTHON, CONNECTIONS, "lookup", "--name", name, "--count", str(count), timeout=60 + 5 * count)
    return json.loads(result.out) if result.rc == 0 else [{"result": f"probe failed: {result.output}", "ms": None}]


def results(attempts: list[dict]) -> list[str]:
    return sorted(set(a["result"] for a in attempts))


def percentile(attempts: list[dict], fraction: float) -> float | None:
    """The attempts' time at FRACTION (0.99 of 20: the slowest but none; 0: the fastest)."""
    times = sorted(a["ms"] for a in attempts if a["ms"] is not None)
    return times[min(len(times) - 1, int(len(times) * fraction))] if times else None


def p99(attempts: list[dict]) -> float | None:
    return percentile(attempts, 0.99)


def p50(attempts: list[dict]) -> float | None:
    return percentile(attempts, 0.5)


def timing(attempts: list[dict]) -> str:
    return f"p50 {p50(attempts):.1f} ms, p99 {p99(attempts):.1f} ms" if attempts and p50(attempts) is not None else "none"


def failure_tables(namespace) -> list[str]:
    """linkcond's failure tables in NAMESPACE, as nft lists them."""
    listed = namespace.run("nft", "list", "tables", "inet")
    return [line.split()[-1] for line in listed.out.splitlines() if "linkcond_failures_" in line]
