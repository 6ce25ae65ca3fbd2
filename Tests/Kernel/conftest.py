"""The kernel suite's fixtures: a topology, a probe server, profiles and a daemon per module.

Each module gets a topology numbered for it alone (harness/topology.py), a probe server in its
server namespace, a profile directory (the shipped profiles, the suite's test profiles and the
module's own `PROFILES`), and `linkcondd` shaping its client end (with the module's
`DAEMON_ARGS`). The function-scoped `daemon` fixture hands each test that daemon running and
with every condition off, whatever the test before it left: one failing test does not take the
rest with it.

How the suite runs (in VMs, in two phases) is harness/vms.py; checks are harness/checks.py.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest

from harness.daemon import Daemon
from harness.oneway import unshaped_families
from harness.probes import ProbeServer, Probes, udp_target
from harness.profiles import profile_directory
from harness.system import HarnessError, group_id, in_vm
from harness.tc import Device
from harness.topology import Topology, load_modules

pytest_plugins = ("harness.checking", "harness.vms")

WORK_ROOT = Path(os.environ.get("LC_WORK", "/tmp/lc-kernel"))
_numbers = itertools.count(1)


@pytest.fixture(scope="session", autouse=True)
def test_machine():
    """The machine the tests run on: a VM (never the host, whose network the suite would
    change) as root, with the daemon's group."""
    if not in_vm() and os.environ.get("LC_ALLOW_HOST") != "1":
        pytest.exit("the kernel suite runs inside a VM: make kernel-test (LC_ALLOW_HOST=1 overrides)", 2)
    if os.geteuid() != 0:
        pytest.exit("the kernel suite runs as root", 2)
    group_id()
    WORK_ROOT.mkdir(parents=True, exist_ok=True)
    yield


@pytest.fixture(scope="module")
def work(request) -> Path:
    """The module's work directory, empty at its start."""
    path = WORK_ROOT / Path(request.module.__file__).stem
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def topo(request) -> Topology:
    """The module's client and server namespaces and their link (10.77.N.1 <-> 10.77.N.2)."""
    load_modules()
    topology = Topology(getattr(request.module, "TOPOLOGY", next(_numbers))).up()
    yield topology
    topology.down()


@pytest.fixture(scope="module")
def device(topo) -> Device:
    """Where the daemon's tree lives: the client's interface and its IFB."""
    return Device(topo.interface, topo.ifb, topo.client)


@pytest.fixture(scope="module")
def server(topo, work) -> ProbeServer:
    probe_server = ProbeServer(topo.server, work).start()
    yield probe_server
    probe_server.stop()


@pytest.fixture(scope="module")
def probes(topo, server) -> Probes:
    return Probes(topo.client, server)


@pytest.fixture(scope="module")
def profiles(request, work) -> Path:
    """The module's profile directory: shipped, test and the module's own `PROFILES`."""
    return profile_directory(work / "profiles", getattr(request.module, "PROFILES", None))


@pytest.fixture(scope="module")
def linkcondd(request, topo, work, profiles) -> Daemon:
    """The module's daemon, started once; stopped with SIGTERM at the module's end."""
    daemon = Daemon(topo.client, topo.interface, work, profiles, args=getattr(request.module, "DAEMON_ARGS", ()))
    daemon.start()
    yield daemon
    daemon.stop()


@pytest.fixture
def daemon(linkcondd) -> Daemon:
    """The module's daemon, running, with every condition off (forced: a lease a test left
    behind ends too)."""
    if not linkcondd.running:
        linkcondd.start()
    linkcondd.api.must(linkcondd.api.request("DELETE", "/v1/conditions?force=1"))
    return linkcondd


@pytest.fixture(scope="module")
def unshaped_rtt(topo, probes, linkcondd):
    """The unshaped round trips of this module's phase (UDP echo, IPv4 and IPv6; the fastest of
    20), measured with the daemon running and nothing in force: what "unshaped" is compared with."""
    linkcondd.api.must(linkcondd.api.request("DELETE", "/v1/conditions?force=1"))
    targets = [udp_target(topo.s4), udp_target(topo.s6)]
    results = probes.rtt(targets, rounds=20, interval=0.02, timeout=1)
    for t in targets:
        if not results[t].all_answered:
            raise HarnessError(f"the unshaped baseline to {t}: {results[t].received} of {results[t].sent} answered")
    return {"IPv4": results[targets[0]].min_ms, "IPv6": results[targets[1]].min_ms}


@pytest.fixture(scope="module")
def unshaped_oneway(topo, probes, linkcondd):
    """The unshaped one-way delays of this module's phase per (family, direction): the 10th
    percentile of a 2 s stream each way, with nothing in force (every packet must arrive)."""
    linkcondd.api.must(linkcondd.api.request("DELETE", "/v1/conditions?force=1"))
    return unshaped_families(probes, topo.s4, topo.s6)
