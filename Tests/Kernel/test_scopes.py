"""Conditions narrower than an interface: one peer each (`--to`), a host name, a gateway's devices
(`--device`) and a local server's port on lo, beside the whole interface's condition.

Each kind of target is measured in IPv4 and IPv6, each direction one way wherever the path
allows it: a peer on a server's whole address, or on its UDP port 9000 (the probe server's
counter), carries `probes.oneway`'s streams both ways. LC Test A (40 ms up, 60 ms down) and LC
Test B (20 up, 35 down) side by side make a packet shaped by the wrong condition, twice, in the
wrong direction or not at all miss its delay by 15 ms or more; the tolerances catch 5 ms.
Silence (Black Hole) is proven linkcond's by the server's echo counters.

The functional tests read status, the kernel's tree and the daemon's step counter, and SIGKILL
the daemon before each step of a peer's change; the timed ones measure delays.

Tolerances (docs/testing.md says why each holds): one way, ±(1 ms + 0.5%) of the profile's delay
against the unshaped one of the same path; "unshaped" one way, ±1 ms of that; a round trip (the
fastest of 10), ±2 ms of the unshaped one plus what the profile adds.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.api import NoAnswer
from harness.checks import minus
from harness.daemon import Daemon
from harness.gateway import Gateway, build_gateway
from harness.oneway import delay_tolerance, unshaped_oneway
from harness.probes import ProbeServer, Probes, tcp_target, udp_target
from harness.system import HarnessError, Result, run, wait_until
from harness.tc import Device, tc, tree_signature, tree_text
from harness.topology import Topology, bracket, families

CHECKS = 173

DAEMON_ARGS = ["--enable-fault-injection"]

#: The one-way streams: 25 packets a second for 2 s each way, the 10th percentile read.
RATE, DURATION = 25, 2
#: A round trip (the fastest of 10) against the unshaped one plus what is added.
RTT_TOLERANCE = 2.0

A = "LC Test A"  # 40 ms up, 60 ms down
B = "LC Test B"  # 20 ms up, 35 ms down
DELAYS = {A: (40, 60), B: (20, 35), None: (0, 0)}


# ---------------------------------------------------------------- the daemon and its state

def must_cli(daemon: Daemon, *args: str) -> Result:
    """`linkcond ARGS`, which must succeed: a setup step, not a check."""
    done = daemon.cli(*args)
    if done.rc != 0:
        raise HarnessError(done.describe())
    return done


def peer_id(topo: Topology, peer: str) -> str:
    return f"{topo.interface}@{peer}"


def conditions_now(daemon: Daemon) -> dict[str, str]:
    """Every listed condition's id and the name of its profile ("off" without one)."""
    return {c["id"]: (c.get("profile") or {}).get("name") or "off" for c in daemon.api.conditions()}


def condition_of(daemon: Daemon, condition_id: str) -> dict | None:
    return next((c for c in daemon.api.conditions() if c["id"] == condition_id), None)


def profile_of(daemon: Daemon, condition_id: str) -> str:
    """The profile in force on CONDITION_ID, "off" when it is not listed."""
    return conditions_now(daemon).get(condition_id, "off")


def addresses_of(daemon: Daemon, condition_id: str) -> list[str] | None:
    found = condition_of(daemon, condition_id)
    return None if found is None else found.get("addresses")


def set_condition(daemon: Daemon, condition_id: str, profile: str) -> None:
    """PROFILE ("off" for none) on CONDITION_ID, through the API."""
    api = daemon.api
    api.must(api.off(condition_id) if profile == "off" else api.activate(profile, condition_id))


def all_off(daemon: Daemon) -> None:
    daemon.api.must(daemon.api.request("DELETE", "/v1/conditions?force=1"))


def state_files(daemon: Daemon) -> list[str]:
    return sorted(p.name for p in daemon.state_dir.iterdir()) if daemon.state_dir.exists() else []


@dataclass
class Peers:
    """The conditions most tests start from: Black Hole on the server's UDP echo port, LC Test B
    on the other server's whole address, each in both families."""

    port4: str
    port6: str
    other4: str
    other6: str

    @classmethod
    def of(cls, topo: Topology, other: tuple[str, str]) -> "Peers":
        return cls(peer_id(topo, f"{topo.s4}:7/udp"), peer_id(topo, f"[{topo.s6}]:7/udp"),
                   peer_id(topo, other[0]), peer_id(topo, other[1]))

    def expected(self) -> dict[str, str]:
        return {self.port4: "Black Hole", self.port6: "Black Hole", self.other4: B, self.other6: B}

    def activate(self, daemon: Daemon) -> None:
        for condition_id, profile in self.expected().items():
            set_condition(daemon, condition_id, profile)


# ---------------------------------------------------------------- what the packets say

def silent(check, probes: Probes, server: ProbeServer, host: str, port: int, name: str) -> None:
    """No UDP echo from HOST:PORT comes back, while the server answered each request: the silence
    is linkcond's. Two checks."""
    key = f"udp/{port}"
    before = server.echoed().get(key, 0)
    target = udp_target(host, port)
    got = probes.rtt([target], rounds=5, interval=0.1, timeout=0.5)[target]
    answered = server.echoed().get(key, 0) - before
    check.equal(f"{name}: no echo comes back", 0, got.received)
    check.equal(f"{name}: the server answered each of the 5 requests (the silence is linkcond's)", 5, answered)


def answers(check, probes: Probes, target: str, name: str, rounds: int = 5) -> None:
    """Every echo to TARGET answered. One check."""
    got = probes.rtt([target], rounds=rounds, interval=0.05, timeout=1)[target]
    check.equal(f"{name}: every echo answered", rounds, got.received)


def rtt_baseline(probes: Probes, targets: list[str]) -> dict[str, float]:
    """The unshaped round trip to each target (the fastest of 20)."""
    results = probes.rtt(targets, rounds=20, interval=0.02, timeout=1)
    for t in targets:
        if not results[t].all_answered:
            raise HarnessError(f"the unshaped round-trip baseline to {t}: {results[t].received} of {results[t].sent} answered")
    return {t: results[t].min_ms for t in targets}


def oneway_checks(check, probes: Probes, host: str, name: str, base: dict[str, float], profile: str | None,
                  **options) -> dict:
    """Each direction's one-way delay to HOST (10th percentile, less BASE's) is PROFILE's (None:
    unshaped), and every packet sent arrived. Two checks."""
    measured = probes.oneway(host, rate=RATE, duration=DURATION, **options)
    for direction, delay in zip(("up", "down"), DELAYS[profile]):
        got = measured[direction]
        added = minus(got.get("quantiles_ms", {}).get("0.1"), base[direction])
        tolerance = delay_tolerance(delay)
        ok = got["received"] == got["sent"] and added is not None and abs(added - delay) <= tolerance
        shown = "missing" if added is None else f"{added:+.3f} ms"
        check.record(f"{name}: {direction} one way, {profile or 'unshaped'}", ok,
                     f"{shown}, {got['received']}/{got['sent']} arrived",
                     f"+{delay} ms, every packet", f"±{tolerance:g} ms")
    return measured


def rtt_checks(check, probes: Probes, expected: dict[str, tuple[str, float]]) -> None:
    """For each NAME: (TARGET, round trip in ms), the fastest of 10 echoes within ±2 ms of it,
    every echo answered. One check each."""
    targets = [t for t, _ in expected.values()]
    results = probes.rtt(targets, rounds=10, interval=0.05, timeout=1)
    for name, (target, ms) in expected.items():
        r = results[target]
        ok = r.all_answered and r.min_ms is not None and abs(r.min_ms - ms) <= RTT_TOLERANCE
        check.record(name, ok, f"{r.min_ms} ms, {r.received}/{r.sent} answered", f"{ms:.3f} ms, every echo",
                     f"±{RTT_TOLERANCE:g} ms")


# ---------------------------------------------------------------- SIGKILL during a change

def sigkill_during_change(check, daemon: Daemon, device: Device, what: str, condition_id: str, cli_peer: str,
                          before: str, after: str, trees: dict[str, str], expected_steps: int,
                          chosen: list[int] | None = None) -> None:
    """The change BEFORE -> AFTER of CONDITION_ID takes EXPECTED_STEPS netlink steps (counted by the
    daemon, the change made with the client); then the daemon SIGKILLs itself before each of
    them (or the CHOSEN ones), is restarted each time, and the condition and the tree are both
    BEFORE's or both AFTER's (TREES: the tree signature of each). Three checks."""
    set_condition(daemon, condition_id, before)
    counted_from = daemon.api.executed_steps()
    must_cli(daemon, "activate", "--to", cli_peer, after)
    steps = daemon.api.executed_steps() - counted_from
    check.equal(f"{what}, {before} -> {after}: netlink steps (counted by the daemon)", expected_steps, steps)
    asked = chosen if chosen is not None else list(range(expected_steps))
    killed, consistent, first_bad = 0, 0, ""
    for step in asked:
        set_condition(daemon, condition_id, before)
        daemon.api.arm_fault(step, "kill")
        # The changes in the loop go through the API: the daemon's crash safety is under test, and
        # the client's start would be most of each round.
        try:
            set_condition(daemon, condition_id, after)
            answered = True
        except NoAnswer:
            answered = False
        if answered or daemon.wait_exit(30) is None:
            daemon.api.disarm_fault()
            continue
        killed += 1
        daemon.start()
        now, tree = profile_of(daemon, condition_id), tree_signature(device)
        if (now, tree) in ((before, trees[before]), (after, trees[after])):
            consistent += 1
        elif not first_bad:
            first_bad = f"; first: step {step}, status {now}, tree {tree}"
    which = "each step" if chosen is None else f"steps {' '.join(map(str, chosen))}"
    check.equal(f"{what}, {before} -> {after}: the daemon SIGKILLed itself before {which}", len(asked), killed)
    check.true(f"{what}, {before} -> {after}: after each SIGKILL and restart, old or new, whole",
               killed > 0 and consistent == killed, f"{consistent} of {killed} consistent{first_bad}",
               "all: the condition and the tree both the old one's or both the new one's")


def trees_of(daemon: Daemon, device: Device, condition_id: str, profiles: list[str]) -> dict[str, str]:
    """The tree signature with CONDITION_ID on each of PROFILES (and "off"), the rest as it is."""
    trees = {}
    for profile in ["off", *profiles]:
        set_condition(daemon, condition_id, profile)
        trees[profile] = tree_signature(device)
    return trees


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def other_server(topo) -> tuple[str, str]:
    """Another server on the main link: its second address, 10.77.N.3 and fd77:N::3."""
    return topo.add_server_address(3)


@pytest.fixture
def peers(topo, other_server) -> Peers:
    return Peers.of(topo, other_server)


@dataclass
class Baseline:
    oneway: dict[str, dict[str, float]]  # host -> direction -> ms
    rtt: dict[str, float]                # target -> ms


@pytest.fixture(scope="module")
def unshaped(topo, probes, linkcondd, other_server) -> Baseline:
    """This phase's unshaped delays to both servers, both families: one way each direction, and
    the round trips to UDP ports 7 and 53; measured with the daemon running and nothing in force."""
    if not linkcondd.running:
        linkcondd.start()
    all_off(linkcondd)
    hosts = [topo.s4, topo.s6, *other_server]
    oneway = {host: unshaped_oneway(probes, host, rate=RATE, duration=DURATION) for host in hosts}
    return Baseline(oneway, rtt_baseline(probes, [udp_target(h, p) for h in hosts for p in (7, 53)]))


HOSTS_NAME = "api.lc.test"


@contextmanager
def named_daemon(linkcondd, topo, work, profiles, other_server, resolv_conf: Path | None = None):
    """The daemon in place of the module's, reading its own hosts file (work/hosts), where
    api.lc.test stands for the other server's two addresses (the test may move it), and
    RESOLV_CONF when given."""
    if linkcondd.running:
        all_off(linkcondd)
        linkcondd.stop()
    hosts = work / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n{other_server[0]} {HOSTS_NAME}\n{other_server[1]} {HOSTS_NAME}\n")
    daemon = Daemon(topo.client, topo.interface, work, profiles, args=DAEMON_ARGS, hosts_file=hosts,
                    resolv_conf=resolv_conf)
    daemon.start()
    try:
        yield daemon
    finally:
        if daemon.running:
            try:
                all_off(daemon)
            finally:
                daemon.stop()


@pytest.fixture
def named(linkcondd, topo, work, profiles, other_server):
    with named_daemon(linkcondd, topo, work, profiles, other_server) as daemon:
        yield daemon


@pytest.fixture
def named_unanswered_dns(linkcondd, topo, work, profiles, other_server):
    """The named daemon whose name server is the server's UDP port 53, which glibc waits 30 s
    for (`timeout:30 attempts:1`): with Black Hole on that port, a lookup of a name the hosts
    file lacks gets no answer, and only the daemon's own deadline ends it."""
    resolv = work / "resolv.conf"
    resolv.write_text(f"nameserver {topo.s4}\noptions timeout:30 attempts:1\n")
    with named_daemon(linkcondd, topo, work, profiles, other_server, resolv) as daemon:
        set_condition(daemon, peer_id(topo, f"{topo.s4}:53/udp"), "Black Hole")
        yield daemon


def move_name(work: Path, v4: str, v6: str) -> None:
    """api.lc.test now stands for V4 and V6, as a name behind a failover moves (written in place:
    the daemon sees the file through a bind mount of it)."""
    (work / "hosts").write_text(f"127.0.0.1 localhost\n{v4} {HOSTS_NAME}\n{v6} {HOSTS_NAME}\n")


@dataclass
class Vlan:
    near: str
    far: str
    c4: str
    s4: str
    c6: str
    s6: str


@pytest.fixture
def vlan(topo):
    """An 802.1Q VLAN (id 100) over the shaped link, addressed at both ends (10.81.N.1/.2,
    fd81:N::1/::2), the tags written into the frames (no VLAN offload on either veth)."""
    n = topo.number
    link = Vlan(f"vlc{n}", f"vls{n}", f"10.81.{n}.1", f"10.81.{n}.2", f"fd81:{n}::1", f"fd81:{n}::2")
    ends = ((topo.client, topo.interface, link.near, link.c4, link.c6),
            (topo.server, topo.link.far_if, link.far, link.s4, link.s6))
    for ns, parent, dev, v4, v6 in ends:
        ns.run("ethtool", "-K", parent, "txvlan", "off", "rxvlan", "off").ok()
        ns.ip("link", "add", "link", parent, "name", dev, "type", "vlan", "id", "100")
        ns.ip("addr", "add", f"{v4}/24", "dev", dev)
        ns.ip("addr", "add", f"{v6}/64", "dev", dev, "nodad")
        ns.ip("link", "set", dev, "up")
    yield link
    for ns, _, dev, _, _ in ends:
        run(["ip", "-n", ns.name, "link", "del", dev])


def vlan_rx_packets(topo: Topology, vlan: Vlan) -> int:
    done = run(["ip", "-n", topo.server.name, "-s", "-j", "link", "show", vlan.far]).ok()
    return json.loads(done.out)[0]["stats64"]["rx"]["packets"]


@pytest.fixture(scope="module")
def gateway(topo, server) -> Gateway:
    return build_gateway(topo, server)


def netem_delays(device: Device, dev: str) -> list[str]:
    """The delays of the netem qdiscs on DEV, each once, as tc prints them."""
    return sorted(set(re.findall(r"qdisc netem \S+ .*?\bdelay ([0-9.]+m?s)", tc(device, "qdisc", "show", "dev", dev))))


@pytest.fixture
def local_server(topo, work):
    """A second probe server, in the client's namespace: its ports on 127.0.0.1 and ::1 are "a
    server on the same machine" for the client there."""
    directory = work / "local"
    directory.mkdir(exist_ok=True)
    local = ProbeServer(topo.client, directory).start()
    yield local
    local.stop()


@pytest.fixture
def loopback(topo) -> Device:
    return Device("lo", "lc-lo", topo.client)


def lo_state(loopback: Device) -> str:
    """lo's qdiscs, linkcond's objects on it, and its IFB: what "as before" compares."""
    kinds = sorted(q["kind"] for q in json.loads(tc(loopback, "-j", "qdisc", "show", "dev", "lo")))
    return f"qdiscs {' '.join(kinds)}; tree {tree_signature(loopback)}; IFB {'present' if loopback.has_ifb() else 'absent'}"


LO_IDLE = "qdiscs noqueue; tree none; IFB absent"


# ================================================================ functional

@pytest.mark.checks(9)
def test_peers_beside_the_interface(check, daemon, topo, probes, server, peers):
    """Conditions on one peer each, the whole interface off: status lists each; the Black Hole
    port is silent in both families, while another port of the same server answers."""
    done = daemon.cli("activate", "--to", f"{topo.s4}:7/udp", "Black Hole")
    check.exit_status(f"activate --to {topo.s4}:7/udp (Black Hole)", done, 0)
    check.contains("it answers with the peer's condition id", done.out, peers.port4)
    peers.activate(daemon)
    check.equal("status lists the whole interface (off) and each peer",
                {topo.interface: "off", **peers.expected()}, conditions_now(daemon))
    for family, host in families(topo.s4, topo.s6):
        silent(check, probes, server, host, 7, f"the server's UDP port 7 on Black Hole, {family}")
        answers(check, probes, udp_target(host, 53), f"another port of that server (53), {family}")


@pytest.mark.checks(9)
def test_peer_switch_steps_and_readoption(check, daemon, topo, device, probes, server, peers, other_server):
    """With the whole interface on LC Test A and four peers: switching one peer's profile takes
    at most its own leaf and queue each way; after SIGKILL and a restart the daemon re-adopts
    the whole tree and every condition."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    signature, listed = tree_signature(device), conditions_now(daemon)
    counted_from = daemon.api.executed_steps()
    must_cli(daemon, "activate", "--interface", topo.interface, "--to", other_server[0], "Nasty Net")
    check.between("switching one peer's profile: kernel steps", daemon.api.executed_steps() - counted_from, 1, 4,
                  "steps", promised="at most its own leaf and queue, in each direction")
    must_cli(daemon, "activate", "--interface", topo.interface, "--to", other_server[0], B)
    check.equal("and back: the whole tree as it was", signature, tree_signature(device))
    daemon.kill()
    daemon.start()
    check.equal("SIGKILL and a restart: the tree of four peers and the whole interface, re-adopted",
                signature, tree_signature(device))
    check.equal("SIGKILL and a restart: every condition listed as before", listed, conditions_now(daemon))
    check.contains("history says the peers' conditions were re-adopted", daemon.cli("history", "-n", "8").out,
                   "re-adopted")
    for family, host in families(topo.s4, topo.s6):
        silent(check, probes, server, host, 7, f"after the restart: the Black Hole port still silent, {family}")


@pytest.mark.checks(3)
def test_sigkill_before_each_step_of_adding_a_peer(check, daemon, topo, device, peers):
    """One more peer's condition on a tree with the whole interface's and four peers': the daemon
    SIGKILLs itself before each of the 8 steps (a class, a leaf, its queue and a filter each
    way), and each restart leaves the peer and the tree old or new, whole."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    new = f"{topo.s4}:53/udp"
    trees = trees_of(daemon, device, peer_id(topo, new), [B])
    sigkill_during_change(check, daemon, device, "one more peer", peer_id(topo, new), new, "off", B, trees, 8)


@pytest.mark.checks(4)
def test_sigkill_before_each_step_of_switching_a_peer(check, daemon, topo, device, peers):
    """The same peer switched from LC Test B to Nasty Net: SIGKILL before each of its 4 steps (its
    two leaves and their queues); then off, the tree of the four peers and the whole interface."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    new = f"{topo.s4}:53/udp"
    trees = trees_of(daemon, device, peer_id(topo, new), [B, "Nasty Net"])
    sigkill_during_change(check, daemon, device, "one more peer", peer_id(topo, new), new, B, "Nasty Net", trees, 4)
    must_cli(daemon, "off", "--to", new)
    check.equal("and off: the tree of the four peers and the whole interface", trees["off"], tree_signature(device))


@pytest.mark.checks(11)
def test_peer_off_leaves_the_others(check, daemon, topo, device, probes, server, peers, other_server):
    """Off for one peer ends its condition alone; a whole server on Black Hole still answers SSH
    (the exemptions come first) but not its UDP echo; off --all leaves the interface as before."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    must_cli(daemon, "off", "--to", f"{topo.s4}:7/udp")
    others = {k: v for k, v in peers.expected().items() if k != peers.port4}
    check.equal("off for one peer: the others stay", {topo.interface: A, **others}, conditions_now(daemon))
    answers(check, probes, udp_target(topo.s4), "off for one peer: its port answers again, IPv4")
    silent(check, probes, server, topo.s6, 7, "off for the IPv4 peer: the IPv6 peer's port still silent")
    for address in other_server:
        must_cli(daemon, "activate", "--interface", topo.interface, "--to", address, "Black Hole")
    for family, host in families(*other_server):
        answers(check, probes, tcp_target(host), f"a whole server on Black Hole: SSH (TCP 22) still answers, {family}")
        silent(check, probes, server, host, 7, f"a whole server on Black Hole: its UDP echo, {family}")
    must_cli(daemon, "off", "--all")
    check.equal("off --all: the interface as before any condition", "none", tree_signature(device))


@pytest.mark.checks(5)
def test_peer_alone_sigkill_before_chosen_steps(check, daemon, topo, device):
    """A peer's condition alone on an untouched interface builds the whole tree around it, 40
    steps (the IFB; each side's root, default class and queue, 10 exemption filters, the peer's
    class, leaf, queue and filter; the ingress qdisc and its 4 redirects). SIGKILL before chosen
    steps: each restart leaves nothing or all of it. SIGTERM then leaves no state file."""
    new = f"{topo.s4}:53/udp"
    trees = trees_of(daemon, device, peer_id(topo, new), [B])
    set_condition(daemon, peer_id(topo, new), "off")
    check.equal("off for the only peer: the interface as before any condition", "none", tree_signature(device))
    sigkill_during_change(check, daemon, device, "a peer alone", peer_id(topo, new), new, "off", B, trees, 40,
                          [0, 1, 5, 15, 25, 39])
    must_cli(daemon, "off", "--all")
    daemon.stop()
    check.equal("SIGTERM: no state file left", [], state_files(daemon))


@pytest.mark.checks(18)
def test_named_peer_looked_up_once(check, named, topo, device, work, probes, server, other_server):
    """A peer by host name (`--to API.lc.test:7/udp`): lower-cased, its addresses (both families,
    IPv4 first) looked up when its condition is made; a switch and a SIGKILL and restart keep
    them after the name moved; off and made again, looked up again."""
    name_id = peer_id(topo, f"{HOSTS_NAME}:7/udp")
    done = named.cli("activate", "--to", "API.lc.test:7/udp", B)
    check.exit_status("activate --to API.lc.test:7/udp (LC Test B)", done, 0)
    check.contains("it answers with the name's condition, lower-cased", done.out, name_id)
    check.equal("status lists the addresses the name resolved to, IPv4 first", list(other_server),
                addresses_of(named, name_id))
    move_name(work, topo.s4, topo.s6)
    set_condition(named, name_id, "Black Hole")
    check.equal("a switch after the name moved: the condition keeps its addresses", list(other_server),
                addresses_of(named, name_id))

    def still_on_the_old_addresses(when: str) -> None:
        for family, host in families(*other_server):
            silent(check, probes, server, host, 7, f"{when}: the named server on Black Hole, {family}")

    still_on_the_old_addresses("after the switch")
    for family, host in families(topo.s4, topo.s6):
        answers(check, probes, udp_target(host), f"the name's new address untouched, {family}")
    named.kill()
    named.start()
    check.equal("SIGKILL and a restart: the stored addresses, not the name's new ones", list(other_server),
                addresses_of(named, name_id))
    still_on_the_old_addresses("after the restart")
    set_condition(named, name_id, "off")
    set_condition(named, name_id, B)
    check.equal("off, then activate again: looked up again", [topo.s4, topo.s6], addresses_of(named, name_id))
    must_cli(named, "off", "--all")
    check.equal("off --all: the interface as before any condition", "none", tree_signature(device))
    named.stop()
    check.equal("SIGTERM: no state file left", [], state_files(named))


@pytest.mark.checks(6)
def test_unknown_and_local_names_refused(check, named, topo, device):
    """A name with no address, and this machine's own name, are refused with what to do, and
    change nothing."""
    set_condition(named, peer_id(topo, HOSTS_NAME), B)
    signature, listed = tree_signature(device), conditions_now(named)
    done = named.cli("activate", "--to", "nosuch.lc.test:7", "Black Hole")
    check.exit_status("a name that resolves to nothing: refused", done, "nonzero")
    check.contains("it says which name could not be looked up", done.err, "cannot look up 'nosuch.lc.test'")
    done = named.cli("activate", "--to", "localhost:8080", "Black Hole")
    check.exit_status("a name for this machine's own loopback: refused", done, "nonzero")
    check.contains("it gives the address to use", done.err, "--to 127.0.0.1:8080")
    check.equal("the refusals changed no tree", signature, tree_signature(device))
    check.equal("the refusals changed no condition", listed, conditions_now(named))


@pytest.mark.checks(6)
def test_gateway_devices_conditions(check, daemon, gateway):
    """On a gateway's LAN interface (another namespace), a condition per device behind it
    (`--device`): each device's downlink leaves the LAN interface towards it, its uplink arrives
    on the LAN's IFB; off --all leaves nothing in the gateway."""
    first, second = gateway.devices
    done = daemon.cli("activate", "--netns", gateway.namespace.name, "--interface", gateway.lan, "--device", first.v4, B)
    check.exit_status(f"activate --device {first.v4} on the gateway's LAN interface", done, 0)
    check.contains("its id names the device", done.out, gateway.condition(first.v4))
    for address, profile in ((first.v6, B), (second.v4, A), (second.v6, A)):
        must_cli(daemon, "activate", "--netns", gateway.namespace.name, "--interface", gateway.lan, "--device",
                 address, profile)
    expected = {gateway.condition(first.v4): B, gateway.condition(first.v6): B,
                gateway.condition(second.v4): A, gateway.condition(second.v6): A}
    check.equal("status lists each device's condition",
                expected, {k: v for k, v in conditions_now(daemon).items() if k in expected or "@device=" in k})
    check.equal("towards the devices (LAN egress): their downlinks, 35 and 60 ms", ["35ms", "60ms"],
                netem_delays(gateway.device, gateway.lan))
    check.equal("from the devices (the LAN's IFB): their uplinks, 20 and 40 ms", ["20ms", "40ms"],
                netem_delays(gateway.device, gateway.device.ifb))
    must_cli(daemon, "off", "--all")
    left = tree_text(gateway.device)
    check.equal("off --all: nothing of linkcond's left in the gateway", "nothing, no IFB",
                f"{'; '.join(left) or 'nothing'}, {'IFB' if gateway.device.has_ifb() else 'no IFB'}")


@pytest.mark.checks(15)
def test_loopback_port_conditions(check, daemon, topo, loopback, local_server):
    """A local server's port (`--to 127.0.0.1:PORT`, `[::1]:PORT`) is a condition on lo: Black
    Hole there silences that port alone, in both families; the whole of lo is refused; a SIGKILL
    and restart re-adopts both; off --all leaves lo as before, without an IFB."""
    local = Probes(topo.client, local_server)
    check.equal("lo before any loopback condition: its default qdisc alone, no IFB", LO_IDLE, lo_state(loopback))
    done = daemon.cli("activate", "--to", "127.0.0.1:7/udp", "Black Hole")
    check.exit_status("activate --to 127.0.0.1:7/udp (Black Hole)", done, 0)
    check.contains("a loopback peer's condition is on lo", done.out, "lo@127.0.0.1:7/udp")
    must_cli(daemon, "activate", "--to", "[::1]:7/udp", "Black Hole")
    for family, host in families("127.0.0.1", "::1"):
        silent(check, local, local_server, host, 7, f"the local server's port 7 on Black Hole, {family}")
        answers(check, local, udp_target(host, 53), f"beside it, another local port (53), {family}")
    shaped = lo_state(loopback)
    done = daemon.cli("activate", "--interface", "lo", B)
    check.exit_status("the whole of lo: refused", done, "nonzero")
    check.contains("it says why", done.err, "needs a local server's port")
    check.equal("the refusal changed nothing on lo", shaped, lo_state(loopback))
    daemon.kill()
    daemon.start()
    check.equal("SIGKILL and a restart: lo's tree and IFB re-adopted as they were", shaped, lo_state(loopback))
    check.equal("SIGKILL and a restart: both loopback conditions re-adopted",
                {topo.interface: "off", "lo@127.0.0.1:7/udp": "Black Hole", "lo@[::1]:7/udp": "Black Hole"},
                conditions_now(daemon))
    must_cli(daemon, "off", "--all")
    check.equal("off --all: lo as before, no IFB of its own", LO_IDLE, lo_state(loopback))


# ================================================================ timed

@pytest.mark.timed
@pytest.mark.checks(10)
def test_peers_each_on_their_own_profile(check, daemon, topo, probes, unshaped, peers, other_server):
    """With the whole interface off: the server's UDP port 9000 under LC Test A, the other server
    under LC Test B, each one way in each direction and family; another port of the first server
    (53) unshaped."""
    peers.activate(daemon)
    for host in (topo.s4, topo.s6):
        set_condition(daemon, peer_id(topo, f"{bracket(host)}:9000/udp"), A)
    for family, host in families(topo.s4, topo.s6):
        oneway_checks(check, probes, host, f"the server's port 9000 under LC Test A, {family}", unshaped.oneway[host], A)
    for family, host in families(*other_server):
        oneway_checks(check, probes, host, f"another server under LC Test B, {family}", unshaped.oneway[host], B)
    rtt_checks(check, probes, {
        f"another port of the first server (53): unshaped, {family}": (t, unshaped.rtt[t])
        for family, t in ((f, udp_target(h, 53)) for f, h in families(topo.s4, topo.s6))})


@pytest.mark.timed
@pytest.mark.checks(4)
def test_header_options_take_the_peers_class(check, daemon, topo, probes, unshaped, peers, other_server):
    """Packets to a peer under LC Test B with IPv4 options (a 24-byte header) or an IPv6
    destination-options header take its class: 20 ms up with them, 35 ms down."""
    peers.activate(daemon)
    for family, host in families(*other_server):
        name = "IPv4 options" if family == "IPv4" else "an IPv6 destination-options header"
        oneway_checks(check, probes, host, f"with {name} up, to the LC Test B server", unshaped.oneway[host], B,
                      ip_options=1)


@pytest.mark.timed
@pytest.mark.checks(5)
def test_vlan_frames_take_the_peers_class(check, daemon, topo, probes, vlan):
    """VLAN-tagged frames (802.1Q) to a peer's VLAN address under LC Test B take its class both
    ways: the uplink's filter on the interface, the downlink's on its IFB after the ingress
    redirect. The far end's VLAN counted the frames."""
    for host in (vlan.s4, vlan.s6):
        target = udp_target(host)
        if not wait_until(lambda: probes.rtt([target], rounds=1)[target].all_answered, 20, 0.2):
            raise HarnessError(f"no echo over the VLAN from {host}")
    base = {host: unshaped_oneway(probes, host, rate=RATE, duration=DURATION) for host in (vlan.s4, vlan.s6)}
    for host in (vlan.s4, vlan.s6):
        set_condition(daemon, peer_id(topo, host), B)
    received_before = vlan_rx_packets(topo, vlan)
    sent_up = 0
    for family, host in families(vlan.s4, vlan.s6):
        measured = oneway_checks(check, probes, host, f"VLAN-tagged frames to a peer under LC Test B, {family}",
                                 base[host], B)
        sent_up += measured["up"]["sent"]
    check.between("the streams went over the VLAN: frames its far end received",
                  vlan_rx_packets(topo, vlan) - received_before, sent_up, sent_up + 30, "frames",
                  promised=f"the {sent_up} sent up (and neighbour traffic)")


@pytest.mark.timed
@pytest.mark.checks(10)
def test_whole_interface_beside_peers(check, daemon, topo, probes, unshaped, peers, other_server):
    """The whole interface on LC Test A beside the peers: unmatched traffic gets A, a peer's B
    alone (shaped once, not A and B); off for the Black Hole ports, they answer with A."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    for family, host in families(topo.s4, topo.s6):
        oneway_checks(check, probes, host, f"unmatched traffic gets the whole interface's LC Test A, {family}",
                      unshaped.oneway[host], A)
    for family, host in families(*other_server):
        oneway_checks(check, probes, host, f"the peer gets LC Test B alone (shaped once), {family}",
                      unshaped.oneway[host], B)
    set_condition(daemon, peers.port4, "off")
    set_condition(daemon, peers.port6, "off")
    added = sum(DELAYS[A])
    rtt_checks(check, probes, {
        f"off for the Black Hole port: it answers with the whole interface's A (+{added} ms), {family}":
            (t, unshaped.rtt[t] + added)
        for family, t in ((f, udp_target(h)) for f, h in families(topo.s4, topo.s6))})


@pytest.mark.timed
@pytest.mark.checks(8)
def test_peers_shaped_after_sigkill_and_restart(check, daemon, topo, probes, unshaped, peers, other_server):
    """After SIGKILL and a restart, the re-adopted tree shapes as before: the peers LC Test B,
    the rest the whole interface's LC Test A."""
    set_condition(daemon, topo.interface, A)
    peers.activate(daemon)
    daemon.kill()
    daemon.start()
    for family, host in families(*other_server):
        oneway_checks(check, probes, host, f"after the restart: the peer still under LC Test B, {family}",
                      unshaped.oneway[host], B)
    for family, host in families(topo.s4, topo.s6):
        oneway_checks(check, probes, host, f"after the restart: the rest still under LC Test A, {family}",
                      unshaped.oneway[host], A)


@pytest.mark.timed
@pytest.mark.checks(24)
def test_named_peer_shaped_at_its_looked_up_addresses(check, unshaped, named, topo, work, probes, other_server):
    """A peer by host name shapes both of its addresses and nothing else; after the name moved,
    a switch keeps shaping the old ones; off and made again, the new ones."""
    name_id = peer_id(topo, HOSTS_NAME)
    servers = {"the named server": other_server, "the other server": (topo.s4, topo.s6)}

    def measure(when: str, profiles: dict[str, str | None]) -> None:
        for who, addresses in servers.items():
            for family, host in families(*addresses):
                profile = profiles[who]
                oneway_checks(check, probes, host, f"{when}: {who} {'under ' + profile if profile else 'unshaped'}, "
                              f"{family}", unshaped.oneway[host], profile)

    set_condition(named, name_id, B)
    measure("made", {"the named server": B, "the other server": None})
    move_name(work, topo.s4, topo.s6)
    set_condition(named, name_id, A)
    measure("switched after the name moved", {"the named server": A, "the other server": None})
    set_condition(named, name_id, "off")
    set_condition(named, name_id, B)
    measure("off and made again", {"the named server": None, "the other server": B})


@pytest.mark.timed
@pytest.mark.checks(4)
def test_unknown_name_answered_within_the_lookup_deadline(check, named_unanswered_dns, topo, device, server):
    """A name whose lookup gets no answer (its name server's port on Black Hole), through the
    API: refused at the lookup's 10 s deadline, not when the resolver gives up (30 s), and
    nothing changes."""
    named = named_unanswered_dns
    signature, listed = tree_signature(device), conditions_now(named)
    asked_before = server.echoed().get("udp/53", 0)
    began = time.monotonic()
    reply = named.api.put_condition({"profile": "Black Hole"}, peer_id(topo, "nosuch.lc.test:7"), timeout=60)
    took = time.monotonic() - began
    check.at_least("the name server was asked (and its answer dropped)", server.echoed().get("udp/53", 0) - asked_before,
                   1, "queries")
    check.between("a lookup without an answer: the daemon answers at its deadline", took, 10, 11, "s",
                  promised="10 s", why="the deadline, then the answer; the resolver's own limit is 30 s")
    check.equal("the answer: the lookup timed out", "503 host-lookup-timed-out", f"{reply.status} {reply.error_code}")
    check.equal("the refusal changed nothing", (signature, listed), (tree_signature(device), conditions_now(named)))


@pytest.mark.timed
@pytest.mark.checks(12)
def test_gateway_devices_each_on_their_own_profile(check, daemon, gateway):
    """Each device behind a gateway on its own profile, one way in each direction and family:
    the first under LC Test B while the second is unshaped, then the second under LC Test A."""
    base = {(d.v4, host): unshaped_oneway(d.probes, host, rate=RATE, duration=DURATION) for d in gateway.devices
            for host in (gateway.server4, gateway.server6)}
    first, second = gateway.devices

    def device_checks(device: GatewayDevice, which: str, profile: str | None) -> None:
        for family, host in families(gateway.server4, gateway.server6):
            oneway_checks(check, device.probes, host, f"{which} {'under ' + profile if profile else 'unshaped'}, {family}",
                          base[device.v4, host], profile)

    def activate(device: GatewayDevice, profile: str) -> None:
        for address in (device.v4, device.v6):
            set_condition(daemon, gateway.condition(address), profile)

    activate(first, B)
    device_checks(first, "the first device", B)
    device_checks(second, "the other device, beside it", None)
    activate(second, A)
    device_checks(second, "the other device", A)


@pytest.mark.timed
@pytest.mark.checks(10)
def test_loopback_port_shaped_once(check, daemon, topo, probes, unshaped, local_server):
    """A local server's UDP port 9000 under LC Test B, IPv4 and IPv6: each packet shaped once (a
    request where it leaves lo towards the port, an answer where it arrives from it), so 20 ms up
    and 35 ms down, not twice either way; the server's other local ports, and the remote server,
    unshaped."""
    local = Probes(topo.client, local_server)
    hosts = ("127.0.0.1", "::1")
    base = {host: unshaped_oneway(local, host, rate=RATE, duration=DURATION) for host in hosts}
    local_ports = {f"another local port ({port}): unshaped, {family}": udp_target(host, port)
                   for family, host in families(*hosts) for port in (7, 53)}
    local_base = rtt_baseline(local, list(local_ports.values()))
    for host in hosts:
        done = daemon.cli("activate", "--to", f"{bracket(host)}:9000/udp", B)
        if done.rc != 0:
            raise HarnessError(done.describe())
    for family, host in families(*hosts):
        oneway_checks(check, local, host, f"the local server's port 9000 under LC Test B (shaped once), {family}",
                      base[host], B)
    rtt_checks(check, local, {name: (t, local_base[t]) for name, t in local_ports.items()})
    rtt_checks(check, probes, {f"the remote server over {topo.interface}: unshaped, {family}": (t, unshaped.rtt[t])
                               for family, t in ((f, udp_target(h)) for f, h in families(topo.s4, topo.s6))})
