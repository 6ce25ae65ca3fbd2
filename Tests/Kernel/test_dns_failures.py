"""DNS failures as conditions (`--dns-failure nxdomain|servfail|timeout`, a profile's `dns:
failure:`), measured with getaddrinfo against a real DNS server across the condition.

Queries leaving through the condition are queued by its nftables table and answered by linkcondd
in the target's namespace, from the address the query went to: the app's resolver gets "no such
name" (EAI_NONAME) or "server failure" (EAI_AGAIN) at once, or no answer (EAI_AGAIN after its
own timeout); names not listed are answered by the server as before. The server's log says which
queries reached it. Debian's kernel under qemu: User-mode Linux's has no nftables inet family.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import attempts
from harness.attempts import CONNECTIONS, curl_exit, failure_tables, percentile, results, timing
from harness.gateway import Gateway, build_gateway
from harness.system import SYSTEM_PYTHON, spawn, stop, wait_until

VM = "qemu"
CHECKS = 3 * 7 + 7 + 4 + 6 + 6 + 5

DNS_SERVER = Path(__file__).resolve().parent / "harness" / "dns_server.py"
#: A lookup that fails "at once" does within this (no resolver timeout).
AT_ONCE_MS = 1000
#: The client's resolver waits this long for an answer (resolv.conf `timeout:1 attempts:1`).
RESOLVER_TIMEOUT_MS = 1000
NAME = "app.linkcond.test"


class DNSServer:
    """dns_server.py in NAMESPACE on ADDRESSES' port 53, and the names it was asked."""

    def __init__(self, namespace, addresses: list[str], work: Path, label: str, exclusive: bool = False):
        self.log, ready = work / f"{label}.dns-log", work / f"{label}.dns-ready"
        for old in (self.log, ready):
            old.unlink(missing_ok=True)
        errors = work / f"{label}.dns-errors"
        argv = [arg for address in addresses for arg in ("--address", address)]
        with open(errors, "w") as stderr:
            self.process = spawn(namespace.argv(SYSTEM_PYTHON, DNS_SERVER, *argv, "--log", self.log, "--ready", ready,
                                                *(["--exclusive"] if exclusive else [])), stderr=stderr)
        if not wait_until(ready.exists, 20):
            raise AssertionError(f"no DNS server on {addresses}: {errors.read_text()[-500:]}")

    def asked(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []

    def stop(self) -> None:
        stop(self.process)


class Resolver:
    """The resolv.conf `ip netns exec` gives NAMESPACE's processes: NAMESERVER, a 1 s timeout."""

    def __init__(self, namespace, nameserver: str):
        self.dir = Path("/etc/netns") / namespace.name
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "resolv.conf").write_text(f"nameserver {nameserver}\noptions timeout:1 attempts:1\n")

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def lookups(namespace, name: str = NAME, count: int = 20) -> list[dict]:
    return attempts.lookups(namespace, name, count)


#: Each kind: what getaddrinfo gets, and whether within AT_ONCE_MS or after the resolver's timeout.
KINDS = {"nxdomain": ("EAI_NONAME", "at once"), "servfail": ("EAI_AGAIN", "at once"), "timeout": ("EAI_AGAIN", "timeout")}


@pytest.mark.debian_kernel
@pytest.mark.checks(7)
@pytest.mark.parametrize("kind", list(KINDS))
def test_dns_failure_on_the_interface(check, daemon, topo, work, kind):
    """`--dns-failure KIND` on the interface, the resolver across it (IPv4): the name resolves
    before; 20 lookups (3 for a timeout) get KIND's error, at once or after the resolver's own
    timeout; none of them reached the server; off, the name resolves again and no table is left."""
    dns = DNSServer(topo.server, [topo.s4], work, f"iface-{kind}")
    resolver = Resolver(topo.client, topo.s4)
    error, when = KINDS[kind]
    try:
        check.equal(f"{kind}: before, the name resolves", ["ok"], results(lookups(topo.client, count=2)))
        heard = len(dns.asked())
        daemon.cli("activate", "--dns-failure", kind).ok()
        failed = lookups(topo.client, count=20 if when == "at once" else 3)
        check.equal(f"{kind}: what getaddrinfo got", [error], results(failed))
        if when == "at once":
            check.at_most(f"{kind}: each at once (p99; {timing(failed)})", percentile(failed, 0.99), AT_ONCE_MS, "ms")
        else:
            check.at_least(f"{kind}: each after the resolver's timeout (fastest; {timing(failed)})",
                           percentile(failed, 0.0), RESOLVER_TIMEOUT_MS * 0.9, "ms")
        check.equal(f"{kind}: no query reached the server", [], dns.asked()[heard:])
        # glibc's answer after one try of a second, for a timeout too: curl's -m is beyond it.
        check.equal(f"{kind}: curl's exit status (6: couldn't resolve the host)", 6, curl_exit(topo.client, NAME, 80))
        daemon.cli("off").ok()
        check.equal(f"{kind}: off, the name resolves", ["ok"], results(lookups(topo.client, count=2)))
        check.equal(f"{kind}: off, no table left", [], failure_tables(topo.client))
    finally:
        daemon.cli("off")
        resolver.remove()
        dns.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(7)
def test_dns_failure_for_listed_names(check, daemon, topo, work):
    """A profile file's `dns: failure: nxdomain` for `*.blocked.linkcond.test`, the resolver over
    IPv6: 20 lookups of a listed name get EAI_NONAME at once and never reach the server; a name not
    listed is answered by the server, as before; status names the failure; off, both resolve."""
    dns = DNSServer(topo.server, [topo.s6], work, "names")
    resolver = Resolver(topo.client, topo.s6)
    profile = work / "blocked.yaml"
    profile.write_text("name: LC Blocked Names\ndns:\n  failure: nxdomain\n  names: ['*.blocked.linkcond.test']\n")
    blocked = "cdn.blocked.linkcond.test"
    try:
        daemon.cli("activate", str(profile)).ok()
        heard = len(dns.asked())
        failed = lookups(topo.client, blocked)
        check.equal("names: a listed name's 20 lookups", ["EAI_NONAME"], results(failed))
        check.at_most(f"names: each at once (p99; {timing(failed)})", percentile(failed, 0.99), AT_ONCE_MS, "ms")
        check.equal("names: none of them reached the server", [], [n for n in dns.asked()[heard:] if n == blocked])
        check.equal("names: a name not listed is answered", ["ok"], results(lookups(topo.client, NAME, count=5)))
        check.true("names: by the server itself", NAME in dns.asked()[heard:], dns.asked()[heard:], NAME)
        check.contains("names: status names the failure", daemon.cli("status").out, "dns: nxdomain for *.blocked.linkcond.test")
        daemon.cli("off").ok()
        check.equal("names: off, the listed name resolves", ["ok"], results(lookups(topo.client, blocked, count=2)))
    finally:
        daemon.cli("off")
        resolver.remove()
        dns.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(4)
def test_dns_failure_in_a_sandbox(check, daemon, topo, work):
    """`linkcond run --isolated --dns-failure servfail -- CMD`: the command's 20 lookups get
    EAI_AGAIN at once, inside its own namespace; the host beside it resolves the same name."""
    dns = DNSServer(topo.server, [topo.s4], work, "sandbox")
    resolver = Resolver(topo.client, topo.s4)
    try:
        result = daemon.cli("run", "--isolated", "--dns-failure", "servfail", "--", SYSTEM_PYTHON, CONNECTIONS,
                            "lookup", "--name", NAME, "--count", "20", timeout=300)
        failed = json.loads(result.out) if result.rc == 0 else []
        check.true("sandbox: the command ran", len(failed) == 20, result.output if result.rc else len(failed), 20, require=True)
        check.equal("sandbox: its 20 lookups", ["EAI_AGAIN"], results(failed))
        check.at_most(f"sandbox: each at once (p99; {timing(failed)})", percentile(failed, 0.99), AT_ONCE_MS, "ms")
        check.equal("sandbox: the host resolves beside it", ["ok"], results(lookups(topo.client, count=3)))
    finally:
        resolver.remove()
        dns.stop()


@pytest.fixture(scope="module")
def gateway(topo, server) -> Gateway:
    return build_gateway(topo, server)


@pytest.mark.debian_kernel
@pytest.mark.checks(6)
def test_dns_failure_for_a_gateway_device(check, daemon, topo, gateway, work):
    """`--dns-failure nxdomain` for one device behind a gateway (its IPv4 address), the resolver
    beyond the router: the device's 20 lookups get EAI_NONAME at once, answered by the router as
    the server; the other device behind the same interface resolves; the stats count the queries;
    off, the device resolves and the router holds no table."""
    first, second = gateway.devices
    dns = DNSServer(topo.server, [gateway.server4], work, "device")
    resolvers = [Resolver(device.namespace, gateway.server4) for device in gateway.devices]
    where = ("--netns", gateway.namespace.name, "--interface", gateway.lan)
    try:
        daemon.cli("activate", *where, "--device", first.v4, "--dns-failure", "nxdomain").ok()
        failed = lookups(first.namespace)
        check.equal("device: its 20 lookups", ["EAI_NONAME"], results(failed))
        check.at_most(f"device: each at once (p99; {timing(failed)})", percentile(failed, 0.99), AT_ONCE_MS, "ms")
        check.equal("device: the other device resolves", ["ok"], results(lookups(second.namespace, count=3)))
        counted = next((c for c in daemon.api.stats()["conditions"] if c["id"] == gateway.condition(first.v4)), {})
        check.true("device: stats name the failure and count its queries (20 lookups, two queries each)",
                   counted.get("failure") == "dns-nxdomain" and (counted.get("failedPackets") or 0) >= 40,
                   f"{counted.get('failure')}, {counted.get('failedPackets')} packets", "dns-nxdomain, >= 40 packets")
        daemon.cli("off", *where, "--device", first.v4).ok()
        check.equal("device: off, it resolves", ["ok"], results(lookups(first.namespace, count=2)))
        check.equal("device: off, the router holds no table", [], failure_tables(gateway.namespace))
    finally:
        daemon.cli("off", *where, "--device", first.v4)
        for resolver in resolvers:
            resolver.remove()
        dns.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(6)
def test_dns_failure_with_the_gateways_own_resolver(check, daemon, topo, gateway, work):
    """`--dns-failure nxdomain` for a device whose resolver is the router itself (its LAN
    addresses, IPv4 then IPv6), served by a DNS server that lets no other socket share its port,
    as a router's own resolver may: the device's 20 lookups each way get EAI_NONAME at once,
    answered in the server's place (a packet built whole, through a raw socket); the server heard
    none of them; the other device resolves through it."""
    first, second = gateway.devices
    dns = DNSServer(gateway.namespace, [gateway.lan4, gateway.lan6], work, "router", exclusive=True)
    resolvers = [Resolver(first.namespace, gateway.lan4), Resolver(second.namespace, gateway.lan4)]
    where = ("--netns", gateway.namespace.name, "--interface", gateway.lan)
    try:
        for address in (first.v4, first.v6):
            daemon.cli("activate", *where, "--device", address, "--dns-failure", "nxdomain").ok()
        for family, nameserver in (("IPv4", gateway.lan4), ("IPv6", gateway.lan6)):
            resolvers[0] = Resolver(first.namespace, nameserver)
            failed = lookups(first.namespace)
            check.equal(f"router's resolver, {family}: the device's 20 lookups", ["EAI_NONAME"], results(failed))
            check.at_most(f"router's resolver, {family}: each at once (p99; {timing(failed)})",
                          percentile(failed, 0.99), AT_ONCE_MS, "ms")
        check.equal("router's resolver: it heard none of the device's lookups", [], dns.asked())
        check.equal("router's resolver: the other device resolves through it", ["ok"], results(lookups(second.namespace, count=3)))
    finally:
        for address in (first.v4, first.v6):
            daemon.cli("off", *where, "--device", address)
        for resolver in resolvers:
            resolver.remove()
        dns.stop()


@pytest.mark.debian_kernel
@pytest.mark.checks(5)
def test_dns_failure_survives_a_crash(check, daemon, topo, work):
    """`--dns-failure nxdomain` in force, the daemon SIGKILLed: with nobody to answer, the queue
    lets queries pass (the name resolves: linkcond never leaves lookups failing behind it);
    restarted, the failure is in force again with one table; off removes it."""
    dns = DNSServer(topo.server, [topo.s4], work, "crash")
    resolver = Resolver(topo.client, topo.s4)
    try:
        daemon.cli("activate", "--dns-failure", "nxdomain").ok()
        check.equal("crash: in force", ["EAI_NONAME"], results(lookups(topo.client, count=3)))
        daemon.kill()
        check.equal("crash: no daemon, the queries pass and the name resolves", ["ok"], results(lookups(topo.client, count=3)))
        daemon.start()
        check.equal("crash: restarted, in force again", ["EAI_NONAME"], results(lookups(topo.client, count=3)))
        check.equal("crash: restarted, one table", [f"linkcond_failures_{topo.interface}"], failure_tables(topo.client))
        daemon.cli("off").ok()
        check.equal("crash: off, the name resolves", ["ok"], results(lookups(topo.client, count=3)))
    finally:
        daemon.cli("off")
        resolver.remove()
        dns.stop()
