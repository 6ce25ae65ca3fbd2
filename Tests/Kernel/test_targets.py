"""Conditions on several targets at once: the daemon's own interface, a second link of the client
(`--interface`), a container's network namespace reached by a process's PID (`--pid`) and a
named one (`--netns`).

Each target's condition is measured with real packets against its own profile, one way per
direction and family, against that target's own unshaped delays (timed); switching, removing,
a SIGKILL and a restart of the daemon, and `run --interface` on one leave the other's tree
exactly as it was; a condition inside a namespace lives there (tree and IFB), is re-adopted after
a SIGKILL, stays whole when the daemon is killed in the middle of building it, and ends when its
namespace does.

Tolerances: a one-way delay within ±(1 ms + 0.5%) of the profile's (harness/targets.py), the
smallest measured being LC Test B's 20 ms up (±1.1 ms); every packet of each stream arrived.
"""

from __future__ import annotations

import json
import signal

import pytest

from harness.api import NoAnswer
from harness.probes import Probes, udp_target
from harness.system import HarnessError, stop, wait_until
from harness.oneway import oneway_checks, unshaped_families
from harness.targets import (ProcessNamespace, condition_names, condition_profile, ifindex, link_to_server,
                             named_namespace, root_and_ingress, wait_listed)
from harness.tc import Device, bulk_netem, qdisc, tree_signature
from harness.topology import families

CHECKS = 132

DAEMON_ARGS = ["--enable-fault-injection"]

#: How long the daemon may take to notice a namespace or a process that ended: it looks every
#: second (a liveness limit, not a timed check).
ENDED_WITHIN = 10


# ---------------------------------------------------------------- targets

@pytest.fixture(scope="module")
def second(topo):
    """The client's second link to the server: veth-eN 10.78.N.1 <-> veth-esN 10.78.N.2."""
    return topo.add_link("e", 78)


@pytest.fixture(scope="module")
def second_device(topo, second) -> Device:
    return Device(second.near_if, second.ifb, topo.client)


class Target:
    """A namespace with a link to the server, the device linkcond shapes there, its condition id
    and the CLI arguments that name it."""

    def __init__(self, namespace, link, device: Device, condition_id: str, selector: list[str]):
        self.namespace = namespace
        self.link = link
        self.device = device
        self.id = condition_id
        self.selector = selector


def forgotten(linkcondd, prefix: str) -> None:
    """Until the daemon lists no condition whose id starts with PREFIX (a namespace a test
    ended): the next test's `daemon` turns every condition off, which a namespace ending at that
    moment would refuse (410 namespace-gone)."""
    if linkcondd.running and not wait_until(
            lambda: not any(c["id"].startswith(prefix) for c in linkcondd.api.conditions()), 15, 0.2):
        raise HarnessError(f"the daemon still lists {prefix}... 15 s after its namespace ended")


@pytest.fixture
def container(topo, server, linkcondd):
    """A container: a network namespace only one process holds, linked to the server
    (veth-kN 10.79.N.1 <-> 10.79.N.2)."""
    namespace = ProcessNamespace().start()
    try:
        link = link_to_server(namespace, topo.server, topo.number, "k", 79)
    except BaseException:
        namespace.stop()
        raise
    pid = namespace.pid
    yield Target(namespace, link, Device(link.near_if, link.ifb, pid=pid), f"pid/{pid}/{link.near_if}",
                 ["--pid", str(pid), "--interface", link.near_if])
    namespace.stop()
    forgotten(linkcondd, f"pid/{pid}/")


@pytest.fixture
def named(topo, server, linkcondd):
    """A namespace of `ip netns add` with nothing living in it, linked to the server
    (veth-nN 10.80.N.1 <-> 10.80.N.2)."""
    name = f"lc-named{topo.number}"
    namespace = named_namespace(name)
    try:
        link = link_to_server(namespace, topo.server, topo.number, "n", 80)
    except BaseException:
        namespace.delete()
        raise
    yield Target(namespace, link, Device(link.near_if, link.ifb, namespace), f"netns/{name}/{link.near_if}",
                 ["--netns", name, "--interface", link.near_if])
    namespace.delete()
    forgotten(linkcondd, f"netns/{name}/")


def both_on(daemon, second, second_profile="LC Test B"):
    """LC Test A on the daemon's interface, SECOND_PROFILE on the second link."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    daemon.api.must(daemon.api.activate(second_profile, second.near_if))


def both_listed(topo, second, second_profile="LC Test B") -> str:
    return f"{topo.interface}=LC Test A {second.near_if}={second_profile}"


def last_history_line(daemon, condition_id: str) -> str | None:
    """The last line `linkcond history` prints about CONDITION_ID, None when there is none."""
    lines = [line for line in daemon.cli("history", "-n", "50").out.splitlines() if f"  {condition_id}  " in line]
    return lines[-1] if lines else None


def steps_of(daemon, *profiles: str) -> int:
    """The netlink steps the daemon took to switch its own interface to each of PROFILES."""
    before = daemon.api.executed_steps()
    for profile in profiles:
        daemon.api.must(daemon.api.activate(profile))
    return daemon.api.executed_steps() - before


# ---------------------------------------------------------------- two interfaces

@pytest.mark.checks(7)
def test_a_condition_on_each_of_two_interfaces(check, daemon, topo, second, device, second_device):
    """`activate --interface` puts a second condition beside the default one; each interface
    holds its own profile's netem, and the status lists both, the default first."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    done = daemon.cli("activate", "--interface", second.near_if, "LC Test B")
    check.exit_status(f"activate --interface {second.near_if}", done, 0)
    check.contains("activate --interface: answers with that interface's condition", done.out,
                   f"{second.near_if}: LC Test B")
    check.contains("the default interface's uplink netem: A's 40 ms", bulk_netem(device), "delay 40ms")
    check.contains("the second interface's uplink netem: B's 20 ms", bulk_netem(second_device), "delay 20ms")
    check.equal("status lists both conditions, the default first", both_listed(topo, second), condition_names(daemon.api))
    check.contains("status (text) shows the second condition", daemon.cli("status").out, f"{second.near_if}: LC Test B")
    listed = daemon.cli("status", "--all", "--json")
    try:
        shown = " ".join(f"{c['id']}={(c.get('profile') or {}).get('name', 'off')}" for c in json.loads(listed.out)["conditions"])
    except (ValueError, KeyError, TypeError):
        shown = None
    check.equal("status --all --json lists both, as GET /v1/conditions does", both_listed(topo, second), shown)


@pytest.mark.checks(1)
def test_switching_the_default_leaves_the_other_tree(check, daemon, second, second_device):
    both_on(daemon, second)
    before = tree_signature(second_device)
    steps_of(daemon, "Nasty Net", "LC Test A")
    check.equal("switching the default condition twice: the second interface's tree", before, tree_signature(second_device))


@pytest.mark.checks(4)
def test_off_on_one_interface_leaves_the_other(check, daemon, topo, second, device, second_device):
    both_on(daemon, second)
    default_tree = tree_signature(device)
    done = daemon.cli("off", "--interface", second.near_if)
    check.exit_status(f"off --interface {second.near_if}", done, 0)
    check.equal(f"off --interface {second.near_if}: its tree gone", "none", tree_signature(second_device))
    check.equal(f"off --interface {second.near_if}: the default's tree", default_tree, tree_signature(device))
    check.equal("off --interface: the condition leaves the list", f"{topo.interface}=LC Test A", condition_names(daemon.api))


@pytest.mark.checks(2)
def test_switch_steps_do_not_depend_on_another_condition(check, daemon, second):
    """A switch of the default condition takes the same netlink steps whether or not another
    interface has a condition: it never touches the other's objects."""
    both_on(daemon, second)
    with_other = steps_of(daemon, "Nasty Net", "LC Test A")
    daemon.api.must(daemon.api.off(second.near_if))
    alone = steps_of(daemon, "Nasty Net", "LC Test A")
    check.at_least("the two switches took netlink steps", with_other, 1, "steps")
    check.equal("netlink steps of the same two switches with and without another condition", alone, with_other)


@pytest.mark.checks(10)
def test_total_loss_on_one_interface_only(check, daemon, topo, second, second_device, probes):
    """100% Loss on the second link: nothing crosses it either way, and its netem counted the
    drops (the silence is linkcond's); meanwhile the default interface answers every request."""
    both_on(daemon, second, "100% Loss")
    for family, host in families(second.far4, second.far6):
        dropped = qdisc(second_device, "7a10:")["drops"]
        target = udp_target(host)
        check.equal(f"100% Loss on {second.near_if}, {family}: echo replies over it", 0,
                    probes.rtt([target], rounds=5, interval=0.05, timeout=0.5)[target].received)
        check.at_least(f"100% Loss, {family}: the uplink netem dropped the requests",
                       qdisc(second_device, "7a10:")["drops"] - dropped, 5, "packets")
        dropped = qdisc(second_device, "7a10:", second.ifb)["drops"]
        down = f"down:{host}"
        check.equal(f"100% Loss, {family}: datagrams delivered down of 100", 0, probes.loss([down], 100)[down])
        check.at_least(f"100% Loss, {family}: the IFB's netem dropped them",
                       qdisc(second_device, "7a10:", second.ifb)["drops"] - dropped, 100, "packets")
    for family, host in families(topo.s4, topo.s6):
        target = udp_target(host)
        check.equal(f"meanwhile the default interface, {family}: echo replies", 5,
                    probes.rtt([target], rounds=5, interval=0.05, timeout=1)[target].received)


@pytest.mark.checks(5)
def test_sigkill_and_restart_readopt_both(check, daemon, topo, second, device, second_device):
    both_on(daemon, second, "100% Loss")
    trees = tree_signature(device), tree_signature(second_device)
    ifb_before = ifindex(second_device, second.ifb)
    if ifb_before is None:
        raise HarnessError(f"no {second.ifb} while the second condition is in force")
    daemon.kill()
    daemon.start()
    check.equal("after a restart: both conditions back", both_listed(topo, second, "100% Loss"), condition_names(daemon.api))
    check.equal("after a restart: the default's tree untouched", trees[0], tree_signature(device))
    check.equal("after a restart: the second's tree untouched", trees[1], tree_signature(second_device))
    check.equal("after a restart: the second's IFB is the same device (re-adopted, not rebuilt)", ifb_before,
                ifindex(second_device, second.ifb))
    check.contains("history names the interface of each change", daemon.cli("history", "-n", "20").out,
                   f"{second.near_if}  off -> 100% Loss")


@pytest.mark.checks(2)
def test_activate_on_an_interface_that_does_not_exist(check, daemon):
    done = daemon.cli("activate", "--interface", "nosuch0", "LC Test B")
    check.exit_status("activate on an interface that does not exist: refused", done, "nonzero")
    check.contains("activate on an interface that does not exist: says so", done.err, "no interface 'nosuch0'")


@pytest.mark.checks(4)
def test_off_all_leaves_nothing(check, daemon, topo, second, device, second_device):
    both_on(daemon, second)
    check.exit_status("off --all", daemon.cli("off", "--all"), 0)
    check.equal("off --all: both trees gone", "none none", f"{tree_signature(device)} {tree_signature(second_device)}")
    check.equal("off --all: neither IFB left", "False False", f"{device.has_ifb()} {second_device.has_ifb()}")
    check.equal("off --all: only the default condition is listed, off", f"{topo.interface}=off", condition_names(daemon.api))


@pytest.mark.checks(4)
def test_sigterm_with_two_conditions_leaves_nothing(check, daemon, topo, second, device, second_device):
    both_on(daemon, second)
    check.equal("SIGTERM with two conditions: exit status", 0, daemon.stop(signal.SIGTERM))
    check.equal("SIGTERM: nothing left on either interface", "none none",
                f"{tree_signature(device)} {tree_signature(second_device)}")
    ifbs = topo.client.run("ip", "-o", "link", "show", "type", "ifb").ok().out
    check.equal("SIGTERM: no IFB of linkcond's", [], [line for line in ifbs.splitlines() if ": lc-" in line])
    state = sorted(p.name for p in daemon.state_dir.iterdir()) if daemon.state_dir.exists() else []
    check.equal("SIGTERM: no state file left", [], state)


# ---------------------------------------------------------------- a container's namespace, by PID

@pytest.mark.checks(7)
def test_container_condition_lives_inside_its_namespace(check, daemon, topo, device, container):
    daemon.api.must(daemon.api.activate("LC Test A"))
    default_tree = tree_signature(device)
    done = daemon.cli("activate", *container.selector, "LC Test B")
    check.exit_status(f"activate --pid --interface {container.link.near_if}", done, 0)
    check.equal("the container's condition in status, by its id",
                f"{topo.interface}=LC Test A {container.id}=LC Test B", condition_names(daemon.api))
    check.equal("linkcondd's own interface meanwhile: its tree", default_tree, tree_signature(device))
    check.equal("inside the container: linkcond's root and ingress", ["htb 7a00:", "ingress ffff:"],
                root_and_ingress(container.device))
    check.contains("inside the container: B's uplink netem", bulk_netem(container.device), "delay 20ms")
    check.equal("the container's IFB is inside it", True, container.device.has_ifb())
    check.equal("nothing of it in linkcondd's namespace (no IFB there)", False, topo.client.has_device(container.link.ifb))


@pytest.mark.checks(7)
def test_container_interface_of_its_default_route(check, daemon, topo, container):
    """`--pid PID` without `--interface`: refused, saying why, while the container has no
    default route; then the interface its default route (IPv6's, the only one) leaves by,
    named in the answer, shaped inside, and `off --pid PID` undoes it."""
    pid = str(container.namespace.pid)
    done = daemon.cli("activate", "--pid", pid, "LC Test B")
    check.exit_status("activate --pid, no default route in the container: refused", done, "nonzero")
    check.contains("activate --pid, no default route: says so", done.err, "no default route")
    container.namespace.ip("-6", "route", "add", "default", "via", container.link.far6, "dev", container.link.near_if).ok()
    done = daemon.cli("activate", "--pid", pid, "LC Test B")
    check.exit_status("activate --pid with an IPv6 default route", done, 0)
    check.contains("activate --pid: the answer names the interface chosen", done.out, container.id)
    check.equal("status lists it by its full id", f"{topo.interface}=off {container.id}=LC Test B", condition_names(daemon.api))
    check.contains("inside the container: B's uplink netem on that interface", bulk_netem(container.device), "delay 20ms")
    done = daemon.cli("off", "--pid", pid)
    check.equal("off --pid: exit status, and linkcond's root and ingress gone from inside", (0, []),
                (done.rc, [q for q in root_and_ingress(container.device) if q in ("htb 7a00:", "ingress ffff:")]))


@pytest.mark.checks(3)
def test_pid_of_the_daemon_names_its_own_interface(check, daemon, topo):
    """The daemon's own namespace by a PID is its own interface under another id: refused,
    naming the id to use."""
    done = daemon.cli("activate", "--pid", str(daemon.pid), "--interface", topo.interface, "LC Test B")
    check.exit_status("activate --pid of linkcondd itself: refused", done, "nonzero")
    check.contains("activate --pid of linkcondd itself: names the id to use", done.err, f"use {topo.interface}")
    check.equal("activate --pid of linkcondd itself: nothing changed", f"{topo.interface}=off", condition_names(daemon.api))


@pytest.mark.checks(3)
def test_container_condition_readopted_after_sigkill(check, daemon, topo, container):
    daemon.api.must(daemon.api.activate("LC Test A"))
    daemon.api.must(daemon.api.activate("LC Test B", container.id))
    tree = tree_signature(container.device)
    ifb_before = ifindex(container.device, container.link.ifb)
    if ifb_before is None:
        raise HarnessError(f"no {container.link.ifb} in the container while its condition is in force")
    daemon.kill()
    daemon.start()
    check.equal("after a restart: the container's condition back",
                f"{topo.interface}=LC Test A {container.id}=LC Test B", condition_names(daemon.api))
    check.equal("after a restart: the container's tree", tree, tree_signature(container.device))
    check.equal("after a restart: the container's IFB is the same device (re-adopted, not rebuilt)", ifb_before,
                ifindex(container.device, container.link.ifb))


@pytest.mark.checks(2)
def test_container_condition_whole_after_sigkill_during_its_build(check, daemon, container):
    """The daemon SIGKILLs itself before chosen netlink steps of a build inside the container
    (before the IFB, just after it, among the classes, the filters, the ingress redirects, the
    last) and is restarted: the container's condition is the old one (off, nothing left) or the
    new one, whole."""
    api = daemon.api
    api.must(api.off(container.id))
    before = api.executed_steps()
    api.must(api.activate("LC Test B", container.id))
    steps = api.executed_steps() - before
    whole = tree_signature(container.device)
    points = [0, 1, 2, 10, 20, 30, 40, steps - 1]
    killed, consistent, bad = 0, 0, []
    for step in points:
        api.must(api.off(container.id))
        api.arm_fault(step, "kill")
        try:
            api.activate("LC Test B", container.id)
        except NoAnswer:
            pass
        if daemon.wait_exit(10) is None:
            api.disarm_fault()
            continue
        killed += 1
        daemon.start()
        now, tree = condition_profile(api, container.id), tree_signature(container.device)
        if (now, tree) in (("off", "none"), ("LC Test B", whole)):
            consistent += 1
        else:
            bad.append(f"step {step}: {now}, tree {tree}")
    check.equal(f"SIGKILL before 8 steps of a build inside the container ({steps} steps): killed", len(points), killed)
    check.true("SIGKILL inside the container + restart: every time off with nothing left, or LC Test B whole",
               consistent == killed, f"{consistent} of {killed} consistent" + (f"; {bad}" if bad else ""),
               f"{killed} of {killed}")


@pytest.mark.checks(5)
def test_condition_ends_with_the_process_it_was_named_by(check, daemon, topo, container):
    """A condition named by a second process of the container (a `docker exec`'s PID) ends when
    that process exits, while the container lives on, and leaves nothing in its namespace."""
    api = daemon.api
    api.must(api.activate("LC Test B", container.id))
    whole = tree_signature(container.device)
    api.must(api.off(container.id))
    joiner = container.namespace.joiner()
    try:
        done = daemon.cli("activate", "--pid", str(joiner.pid), "--interface", container.link.near_if, "LC Test B")
        check.exit_status("activate --pid of a second process in the container", done, 0)
        check.equal("the second process's condition: the container's tree", whole, tree_signature(container.device))
    finally:
        stop(joiner, signal.SIGKILL)
    check.at_most("the process named exits, the container lives: its condition leaves the list within",
                  wait_listed(api, f"{topo.interface}=off", ENDED_WITHIN), ENDED_WITHIN, "s",
                  why="the daemon looks every second")
    check.equal("the process named exits: nothing of linkcond's left in the living container", "tree none, IFB False",
                f"tree {tree_signature(container.device)}, IFB {container.device.has_ifb()}")
    check.contains("history: removed through another process of the container",
                   last_history_line(daemon, f"pid/{joiner.pid}/{container.link.near_if}"), "removed through /proc/")


@pytest.mark.checks(5)
def test_container_stop_ends_its_condition(check, daemon, topo, device, container):
    """The container stops: its namespace ends, and with it the condition; a daemon stopped
    afterwards leaves no state of it behind."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    default_tree = tree_signature(device)
    daemon.api.must(daemon.api.activate("LC Test B", container.id))
    container.namespace.stop(signal.SIGKILL)
    check.at_most("the container stops: its condition leaves the list within",
                  wait_listed(daemon.api, f"{topo.interface}=LC Test A", ENDED_WITHIN), ENDED_WITHIN, "s",
                  why="the daemon looks every second")
    check.contains("history says the namespace ended", last_history_line(daemon, container.id), "namespace-ended")
    check.equal("linkcondd's own interface meanwhile: its tree", default_tree, tree_signature(device))
    check.equal("SIGTERM after the namespace ended: exit status", 0, daemon.stop(signal.SIGTERM))
    state = sorted(p.name for p in daemon.state_dir.iterdir()) if daemon.state_dir.exists() else []
    check.equal("SIGTERM after the namespace ended: no state file left", [], state)


# ---------------------------------------------------------------- a named namespace

@pytest.mark.checks(9)
def test_named_namespace_condition_ends_with_its_namespace(check, daemon, topo, named):
    daemon.api.must(daemon.api.activate("LC Test B"))
    done = daemon.cli("activate", *named.selector, "LC Test A")
    check.exit_status(f"activate --netns {named.namespace.name}", done, 0)
    check.equal("the named namespace's condition in status, by its id",
                f"{topo.interface}=LC Test B {named.id}=LC Test A", condition_names(daemon.api))
    check.equal("inside the named namespace: linkcond's root and ingress", ["htb 7a00:", "ingress ffff:"],
                root_and_ingress(named.device))
    check.equal("the IFB inside the named namespace, none in linkcondd's", "True False",
                f"{named.device.has_ifb()} {topo.client.has_device(named.link.ifb)}")
    missing = daemon.cli("activate", "--netns", "nosuch", "--interface", "eth0", "LC Test A")
    check.exit_status("a namespace that does not exist: refused", missing, "nonzero")
    check.contains("a namespace that does not exist: says how to list them", missing.err, "ip netns list")
    named.namespace.delete()
    check.at_most("ip netns del: its condition leaves the list within",
                  wait_listed(daemon.api, f"{topo.interface}=LC Test B", ENDED_WITHIN), ENDED_WITHIN, "s",
                  why="the daemon looks every second")
    check.contains("history says the namespace ended", last_history_line(daemon, named.id), "namespace-ended")
    # It looked each second while the namespace lived: on its event loop's timer, never through
    # Task.sleep, whose first use starts libdispatch's pool and its once-a-second monitor.
    check.equal("after the namespace watch's seconds: threads in linkcondd not its own", [], daemon.foreign_threads())


# ---------------------------------------------------------------- measured (timed)

@pytest.fixture(scope="module")
def unshaped_default(topo, probes, linkcondd):
    linkcondd.api.must(linkcondd.api.request("DELETE", "/v1/conditions?force=1"))
    return unshaped_families(probes, topo.s4, topo.s6)


@pytest.fixture(scope="module")
def unshaped_second(second, probes, linkcondd):
    linkcondd.api.must(linkcondd.api.request("DELETE", "/v1/conditions?force=1"))
    return unshaped_families(probes, second.far4, second.far6)


@pytest.mark.timed
@pytest.mark.checks(16)
def test_each_interface_measured_against_its_own_profile(check, daemon, topo, second, probes, unshaped_default,
                                                         unshaped_second):
    """LC Test A (40 up, 60 down) on the default interface, LC Test B (20 up, 35 down) on the
    second, measured one way per direction and family over each link."""
    both_on(daemon, second)
    oneway_checks(check, probes, f"default {topo.interface} under A", topo.s4, topo.s6, unshaped_default, 40, 60)
    oneway_checks(check, probes, f"second {second.near_if} under B", second.far4, second.far6, unshaped_second, 20, 35)


@pytest.mark.timed
@pytest.mark.checks(8)
def test_default_measured_while_the_other_drops_everything(check, daemon, topo, second, probes, unshaped_default):
    both_on(daemon, second, "100% Loss")
    oneway_checks(check, probes, f"default {topo.interface} under A, the second under 100% Loss", topo.s4, topo.s6,
                  unshaped_default, 40, 60)


@pytest.mark.timed
@pytest.mark.checks(12)
def test_run_interface_holds_that_interface_only(check, daemon, topo, work, second, device, second_device, probes,
                                                 unshaped_second):
    """`run --interface` puts its profile on that interface for as long as its command runs,
    measured while it runs, and leaves the default's condition alone."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    default_tree = tree_signature(device)
    ready, done = work / "run-ready", work / "run-done"
    ready.unlink(missing_ok=True)
    done.unlink(missing_ok=True)
    process = daemon.client_process("run", "--interface", second.near_if, "--profile", "LC Test B", "--", "sh", "-c",
                                    f'touch "{ready}"; while [ ! -e "{done}" ]; do sleep 0.05; done')
    try:
        if not wait_until(ready.exists, 30, 0.05):
            raise HarnessError("run's command did not start")
        check.equal("while run --interface runs: both conditions listed", both_listed(topo, second),
                    condition_names(daemon.api))
        oneway_checks(check, probes, f"run --interface {second.near_if} under B", second.far4, second.far6,
                      unshaped_second, 20, 35)
    finally:
        done.touch()
        try:
            rc = process.wait(30)
        except Exception:
            process.kill()
            rc = None
    check.equal(f"run --interface {second.near_if}: exit status, the command's own", 0, rc)
    check.equal("after run: the second interface is clean", "none", tree_signature(second_device))
    check.equal("after run: the default is untouched", default_tree, tree_signature(device))


@pytest.mark.timed
@pytest.mark.checks(8)
def test_container_measured_against_its_profile(check, daemon, container, server):
    inside = Probes(container.namespace, server)
    base = unshaped_families(inside, container.link.far4, container.link.far6)
    daemon.api.must(daemon.api.activate("LC Test A"))
    daemon.api.must(daemon.api.activate("LC Test B", container.id))
    oneway_checks(check, inside, "inside the container under B", container.link.far4, container.link.far6, base, 20, 35)


@pytest.mark.timed
@pytest.mark.checks(8)
def test_named_namespace_measured_against_its_profile(check, daemon, named, server):
    inside = Probes(named.namespace, server)
    base = unshaped_families(inside, named.link.far4, named.link.far6)
    daemon.api.must(daemon.api.activate("LC Test B"))
    daemon.api.must(daemon.api.activate("LC Test A", named.id))
    oneway_checks(check, inside, "inside the named namespace under A", named.link.far4, named.link.far6, base, 40, 60)
