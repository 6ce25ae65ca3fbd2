"""The failures apps crash on, as conditions, measured with real clients and servers.

`linkcond reset` (sock_diag's SOCK_DESTROY in the target's namespace): the app's blocked read on
each of the condition's connections fails with ECONNABORTED before the reset's answer, and its far
end's with ECONNRESET; the peer's other connections elsewhere, SSH (the default exemption) and
loopback stay up and carry data; a new connection works. For a peer (`--to`, IPv4 and IPv6), for
another network namespace (`--netns`: every connection that leaves it), and as a scenario's step
(`reset: true`) begins. Debian's kernel under
qemu: User-mode Linux's has no CONFIG_INET_DIAG_DESTROY, which test_errors checks is refused.

Functional: a failure at once is bounded by the reset's own answer, not by a clock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness import contract
from harness.profiles import scenario_directory
from harness.system import SYSTEM_PYTHON, spawn, stop, wait_until

VM = "qemu"
CHECKS = 36

CONNECTIONS = Path(__file__).resolve().parent / "harness" / "connections.py"
PORT = 9400
#: Held open to the peer that is reset, to another address of the same server, and to SSH's port.
RESET_COUNT = 3


RESET_STEP = """name: LC Reset Step
steps:
  - profile: LC Test A
  - label: Network changed
    profile: LC Test B
    reset: true
"""


@pytest.fixture(scope="module")
def profiles(profiles):
    """The module's profiles, and beside them a scenario whose second step resets."""
    (scenario_directory(profiles) / "lc-reset-step.yaml").write_text(RESET_STEP)
    return profiles


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Ends:
    """Servers in one namespace and clients in another, each reporting how its connections end."""

    def __init__(self, work: Path, name: str):
        self.dir = work / name
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.iterdir():
            old.unlink()
        self.processes = []
        self.probe = self.dir / "probe"

    def serve(self, namespace, address: str, port: int, label: str) -> Path:
        report, ready = self.dir / f"{label}.server", self.dir / f"{label}.listening"
        self.processes.append(spawn(namespace.argv(SYSTEM_PYTHON, CONNECTIONS, "serve", "--address", address,
                                                   "--port", str(port), "--report", report, "--ready", ready)))
        if not wait_until(ready.exists, 20):
            raise AssertionError(f"no server listening on {address}:{port}")
        return report

    def hold(self, namespace, host: str, port: int, count: int, label: str, must: bool = True) -> Path | None:
        """COUNT connections to HOST:PORT from NAMESPACE, open; their report. None when they did
        not open (and MUST is false)."""
        report, ready = self.dir / f"{label}.client", self.dir / f"{label}.open"
        self.processes.append(spawn(namespace.argv(SYSTEM_PYTHON, CONNECTIONS, "hold", "--host", host, "--port", str(port),
                                                   "--count", str(count), "--report", report, "--ready", ready,
                                                   "--probe", self.probe)))
        if wait_until(ready.exists, 20):
            return report
        if must:
            raise AssertionError(f"the connections to {host}:{port} did not open")
        return None

    def probe_survivors(self) -> None:
        """Every connection still open sends a byte and reports whether it came back."""
        self.probe.touch()

    def stop(self) -> None:
        for process in self.processes:
            stop(process)


def ended(report: Path, count: int, timeout: float = 10) -> list[dict]:
    """The first COUNT events of REPORT, once there are as many (or what there is after TIMEOUT)."""
    wait_until(lambda: len(events(report)) >= count, timeout)
    return events(report)[:count]


def reset(daemon, *target: str) -> tuple[dict | None, float, float, str]:
    """`linkcond reset TARGET --json`: its answer, when it was asked and answered (monotonic),
    and its output when it failed."""
    began = time.monotonic()
    result = daemon.cli("reset", *target, "--json", timeout=60)
    answered = time.monotonic()
    return (json.loads(result.out) if result.rc == 0 else None), began, answered, result.output


@pytest.mark.debian_kernel
@pytest.mark.checks(11)
@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_reset_of_a_peer(check, daemon, topo, work, family):
    """`linkcond reset --to PEER` on the daemon's namespace: three connections to the peer fail at
    once at both ends; one to another address of the same server, and one to SSH's port on the
    peer (the default exemption), carry data after it; a new connection to the peer works; the
    history says so."""
    peer4, peer6 = topo.s4, topo.s6
    other4, other6 = topo.add_server_address(40 if family == "IPv4" else 41)
    peer, other = (peer4, other4) if family == "IPv4" else (peer6, other6)
    ends = Ends(work, f"peer-{family}")
    try:
        served = ends.serve(topo.server, "::" if family == "IPv6" else "0.0.0.0", PORT, "peer")
        ssh_served = ends.serve(topo.server, "::" if family == "IPv6" else "0.0.0.0", 22, "ssh")
        to_peer = ends.hold(topo.client, peer, PORT, RESET_COUNT, "peer")
        to_other = ends.hold(topo.client, other, PORT, 1, "other")
        to_ssh = ends.hold(topo.client, peer, 22, 1, "ssh")

        answer, began, answered, output = reset(daemon, "--to", peer)
        check.true(f"{family}: reset answered", answer is not None, output if answer is None else "answered", "answered",
                   require=True)
        check.equal(f"{family}: connections reset, as the answer counts them", RESET_COUNT, answer.get("reset"))
        check.equal(f"{family}: the answer as docs/openapi.yaml describes it", [],
                    contract.Validator(contract.load_spec()).errors("ResetResponse", answer))
        clients = ended(to_peer, RESET_COUNT)
        check.equal(f"{family}: what the app's blocked reads got", ["ECONNABORTED"] * RESET_COUNT,
                    sorted(e["event"] for e in clients))
        latest = max((e["at"] for e in clients), default=None)
        check.true(f"{family}: each failed before the reset's answer (at once, not on a timeout)",
                   latest is not None and latest <= answered,
                   None if latest is None else f"{(latest - began) * 1000:.1f} ms after the request, "
                   f"the answer at {(answered - began) * 1000:.1f} ms", "before the answer")
        servers = ended(served, RESET_COUNT)
        check.equal(f"{family}: what the server's blocked reads got", ["ECONNRESET"] * RESET_COUNT,
                    sorted(e["event"] for e in servers))

        # Before the survivors are probed (whose clients then close): by now the server has
        # heard of every reset, an SSH session's included had there been one.
        check.equal(f"{family}: the peer's SSH server saw no connection end", [], events(ssh_served))
        ends.probe_survivors()
        check.equal(f"{family}: the connection to another address of the server carries data", ["alive"],
                    [e["event"] for e in ended(to_other, 1)])
        check.equal(f"{family}: SSH's connection to the peer (exempt) carries data", ["alive"],
                    [e["event"] for e in ended(to_ssh, 1)])

        fresh = ends.hold(topo.client, peer, PORT, 1, "fresh", must=False)
        check.true(f"{family}: a new connection to the peer opens", fresh is not None,
                   "opened" if fresh else "did not open", "opened")
        resets = [entry.get("detail") for entry in daemon.api.history(20) if entry.get("reason") == "reset"]
        check.equal(f"{family}: history, its last reset", f"reset {RESET_COUNT}: TCP connections with {peer}",
                    resets[-1] if resets else None)
    finally:
        ends.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(8)
def test_reset_of_a_namespace(check, daemon, topo, work):
    """`linkcond reset --netns SERVER --interface IF`: every connection that leaves the server's
    namespace ends (ECONNABORTED on the server's side, ECONNRESET on the client's); a connection
    over the server's own loopback carries data after it."""
    ends = Ends(work, "namespace")
    try:
        served = ends.serve(topo.server, "0.0.0.0", PORT + 1, "leaving")
        ends.serve(topo.server, "127.0.0.1", PORT + 2, "loopback")
        clients = ends.hold(topo.client, topo.s4, PORT + 1, 2, "leaving")
        local = ends.hold(topo.server, "127.0.0.1", PORT + 2, 1, "loopback")

        answer, began, answered, output = reset(daemon, "--netns", topo.server.name, "--interface", topo.link.far_if)
        check.true("namespace: reset answered", answer is not None, output if answer is None else "answered", "answered",
                   require=True)
        check.equal("namespace: connections reset (the server's ends)", 2, answer.get("reset"))
        check.equal("namespace: which", "TCP connections that leave the namespace", answer.get("connections"))
        server_events = ended(served, 2)
        check.equal("namespace: what the server's blocked reads got", ["ECONNABORTED"] * 2,
                    sorted(e["event"] for e in server_events))
        latest = max((e["at"] for e in server_events), default=None)
        check.true("namespace: each failed before the reset's answer", latest is not None and latest <= answered,
                   None if latest is None else f"{(latest - began) * 1000:.1f} ms after the request", "before the answer")
        check.equal("namespace: what the client's blocked reads got", ["ECONNRESET"] * 2,
                    sorted(e["event"] for e in ended(clients, 2)))
        ends.probe_survivors()
        check.equal("namespace: the server's loopback connection carries data", ["alive"],
                    [e["event"] for e in ended(local, 1)])
        check.equal("namespace: the condition is not held after it", [topo.interface],
                    [c["id"] for c in daemon.api.conditions()])
    finally:
        ends.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(6)
def test_reset_as_a_scenario_step_begins(check, daemon, topo, work):
    """A scenario played on a peer: `linkcond next` begins its step with `reset: true`, and the
    connections with the peer fail at both ends before the answer; the step's profile is in force;
    the history says which step reset how many."""
    ends = Ends(work, "scenario")
    try:
        served = ends.serve(topo.server, "0.0.0.0", PORT + 3, "scenario")
        clients = ends.hold(topo.client, topo.s4, PORT + 3, 2, "scenario")
        peer = f"{topo.s4}:{PORT + 3}"
        daemon.cli("play", "LC Reset Step", "--to", peer).ok()
        began = time.monotonic()
        moved = daemon.cli("next", "--to", peer, "--json")
        answered = time.monotonic()
        status = json.loads(moved.out) if moved.rc == 0 else {}
        check.equal("scenario: next answered, the resetting step in force", "LC Test B",
                    (status.get("profile") or {}).get("name") if moved.rc == 0 else moved.output)
        client_events = ended(clients, 2)
        check.equal("scenario: what the app's blocked reads got", ["ECONNABORTED"] * 2, sorted(e["event"] for e in client_events))
        latest = max((e["at"] for e in client_events), default=None)
        check.true("scenario: each failed before next's answer", latest is not None and latest <= answered,
                   None if latest is None else f"{(latest - began) * 1000:.1f} ms after the request", "before the answer")
        check.equal("scenario: what the server's blocked reads got", ["ECONNRESET"] * 2,
                    sorted(e["event"] for e in ended(served, 2)))
        resets = [entry.get("detail") for entry in daemon.api.history(20) if entry.get("reason") == "reset"]
        check.equal("scenario: history, the step's reset", f"reset 2: TCP connections with {peer}, as step 'Network changed' began",
                    resets[-1] if resets else None)
        summary = [s for s in daemon.api.get_json("/v1/scenarios")["scenarios"] if s["name"] == "LC Reset Step"]
        check.equal("scenario: the list says which step resets", ["LC Test A until linkcond next",
                                                                  "Network changed, connections reset, until linkcond next"],
                    summary[0]["steps"] if summary else None)
    finally:
        ends.stop()
