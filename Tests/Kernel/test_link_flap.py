"""A link that goes down and comes back (`failure: link-down`, `--link-down`), as Wi-Fi dropping
out: a namespace's veth loses its carrier (its other end, in the daemon's namespace, goes down)
and the namespace stops using the routes through it; the app sees the link stop running and its
connections fail with ENETUNREACH at once; when the condition ends, everything returns, routes and
the other end's addresses included, without anything re-added. Measured with real connections, in
User-mode Linux (no nftables needed). A sandbox's flap, as a scenario's step, is in
test_failures.py (a sandbox needs qemu's nftables).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.attempts import CONNECTIONS, p99, results, timing, tries
from harness.system import SYSTEM_PYTHON, spawn, stop, wait_until

CHECKS = 2 * 9 + 4 + 3

PORT = 9600
#: A connection through a link that is down fails within this: no route, not a timeout.
AT_ONCE_MS = 100

class Listener:
    def __init__(self, namespace, address: str, port: int, work: Path, label: str):
        ready = work / f"{label}.listening"
        ready.unlink(missing_ok=True)
        self.process = spawn(namespace.argv(SYSTEM_PYTHON, CONNECTIONS, "serve", "--address", address, "--port", str(port),
                                            "--report", work / f"{label}.server", "--ready", ready))
        if not wait_until(ready.exists, 20):
            raise AssertionError(f"no server on {address}:{port}")

    def stop(self) -> None:
        stop(self.process)


def operstate(namespace, interface: str) -> str:
    return namespace.run("cat", f"/sys/class/net/{interface}/operstate").out.strip()


def routes(namespace, family: str) -> list[str]:
    """The namespace's routes, without the `linkdown` a route through a carrierless link shows."""
    listed = namespace.run("ip", family, "route", "show").out.splitlines()
    return sorted(line.replace(" linkdown", "").replace(" dead", "").strip() for line in listed
                  if not line.startswith(("fe80", "multicast")))


@pytest.mark.checks(9)
@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_link_down_for_a_namespace(check, daemon, topo, work, family):
    """`--link-down` on another namespace's veth: its 20 connections fail with ENETUNREACH within
    100 ms each; its link says so (operstate); its routes are all still there; status names the
    failure; off: connections work, the link is up, the routes are as before and the namespace's
    setting is back to 0."""
    server, client = (topo.s4, topo.c4) if family == "IPv4" else (topo.s6, topo.c6)
    far = topo.link.far_if
    where = ("--netns", topo.server.name, "--interface", far)
    listener = Listener(topo.client, "::", PORT + (0 if family == "IPv4" else 1), work, f"ns-{family}")
    port = PORT + (0 if family == "IPv4" else 1)
    flag = "-4" if family == "IPv4" else "-6"
    before = routes(topo.server, flag)
    try:
        check.equal(f"{family}: before, the namespace connects", ["ok"], results(tries(topo.server, client, port, count=2)))
        daemon.cli("activate", "--link-down", *where).ok()
        connects = tries(topo.server, client, port)
        check.equal(f"{family}: 20 connections while the link is down", ["ENETUNREACH"], results(connects))
        check.at_most(f"{family}: each at once (p99; {timing(connects)})", p99(connects), AT_ONCE_MS, "ms")
        check.true(f"{family}: the namespace sees its link down", operstate(topo.server, far) in ("lowerlayerdown", "down"),
                   operstate(topo.server, far), "lowerlayerdown")
        check.equal(f"{family}: its routes are still there", before, routes(topo.server, flag))
        check.contains(f"{family}: status names the failure", daemon.cli("status", *where).out, "link-down")
        daemon.cli("off", *where).ok()
        check.equal(f"{family}: off, the namespace connects", ["ok"], results(tries(topo.server, client, port, count=3)))
        check.equal(f"{family}: off, its routes are as before and its link up", (before, "up"),
                    (routes(topo.server, flag), operstate(topo.server, far)))
        setting = topo.server.run("sysctl", "-n", f"net.ipv4.conf.{far}.ignore_routes_with_linkdown").out.strip()
        check.equal(f"{family}: off, ignore_routes_with_linkdown back to 0", "0", setting)
    finally:
        daemon.cli("off", *where)
        listener.stop()


@pytest.mark.checks(4)
def test_link_down_survives_a_crash(check, daemon, topo, work):
    """`--link-down` on the server namespace, the daemon SIGKILLed: the link stays down with
    nobody to bring it back; restarted, the condition is link-down again and the link still down;
    off brings it back and the namespace connects."""
    far = topo.link.far_if
    where = ("--netns", topo.server.name, "--interface", far)
    listener = Listener(topo.client, "::", PORT + 2, work, "crash")
    try:
        daemon.cli("activate", "--link-down", *where).ok()
        daemon.kill()
        check.equal("crash: no daemon, the link stays down", ["ENETUNREACH"], results(tries(topo.server, topo.c4, PORT + 2, count=3)))
        daemon.start()
        status = daemon.cli("status", *where).out
        check.true("crash: restarted, the condition is link-down and the link down",
                   "link-down" in status and operstate(topo.server, far) in ("lowerlayerdown", "down"),
                   (status.splitlines()[:3], operstate(topo.server, far)), "link-down, lowerlayerdown")
        daemon.cli("off", *where).ok()
        check.equal("crash: off, the link is up", "up", operstate(topo.server, far))
        check.equal("crash: off, the namespace connects", ["ok"], results(tries(topo.server, topo.c4, PORT + 2, count=3)))
    finally:
        daemon.cli("off", *where)
        listener.stop()


@pytest.mark.checks(3)
def test_link_down_refused_over_added_routes(check, daemon, topo, work):
    """The veth's other end carries a route someone added (which the kernel would remove as it
    goes down, and not put back): `--link-down` is refused, naming the route, and nothing changes."""
    far, near = topo.link.far_if, topo.link.near_if
    where = ("--netns", topo.server.name, "--interface", far)
    topo.client.ip("route", "add", "10.99.0.0/24", "dev", near)
    try:
        refused = daemon.cli("activate", "--link-down", *where)
        check.true("added route: refused", refused.rc != 0, refused.rc, "non-zero")
        check.contains("added route: the refusal names it", refused.output, "10.99.0.0/24")
        check.equal("added route: nothing changed (the link up, the route there)", ("up", True),
                    (operstate(topo.server, far), "10.99.0.0/24" in topo.client.run("ip", "route", "show").out))
    finally:
        daemon.cli("off", *where)
        topo.client.run("ip", "route", "del", "10.99.0.0/24", "dev", near)
