"""`linkcond run --isolated` sandboxes: two at once on different profiles beside the host's own
unshaped traffic, each one's delay measured one way per direction; what is left of them after
their commands exit, a SIGKILL of their client, and a SIGKILL and restart of the daemon; a
refusal at each of the 10 steps of joining one to the host, and a SIGKILL before each of them
and before some of its tree's 51; a host firewall that drops forwarded packets; and the sandbox
requests a group member may not make.

User-mode Linux for the refusals and the kills before the NAT step (the last of its plumbing);
Debian's kernel under qemu (`debian_kernel`) for every test that builds a whole sandbox (User-mode
Linux lacks nftables' ip family, which the sandboxes' NAT needs) or makes a user namespace (which
User-mode Linux refuses). Every "nothing left" reads the
kernel (harness/sandboxes.py) and fails when it cannot.
Sandboxes are IPv4 only (docs/how-it-works.md): a sandbox's IPv6 is checked to reach nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from harness import oneway
from harness.checks import minus
from harness.probes import PROBE as PROBE_FILE
from harness.sandboxes import (command_pid, condition_summary, descendants, first_answer, forwarding, isolated_argv,
                               kill_pids, leftovers, member_lease, read_json, start_isolated, wait_listed,
                               wait_no_leftovers)
from harness.packet_traces import read_trace
from harness.system import SYSTEM_PYTHON, as_member, run, wait_until
from harness.tc import Device, qdisc
from harness.topology import families

VM = "uml"
DAEMON_ARGS = ["--enable-fault-injection"]
CHECKS = 158 + 7

#: A sandbox's build: its plumbing (the veth pair, the host end's address, forwarding on it, the
#: host end up, lo up inside, the sandbox's address, its eth0 up, its default route, forwarding on
#: the daemon's interface, which the module turns off first; then the NAT table), then its tree,
#: a whole interface's.
PLUMBING = [
    "add veth lcsb", "to lcsb", "turn IPv4 forwarding on for lcsb", "set lcsb", "set lo up in",
    "to eth0 in", "set eth0 up in", "add the default route via", "turn IPv4 forwarding on for veth-c",
    "add table ip linkcond_sandbox_",
]
TREE_STEPS = 51
#: Steps of the tree to SIGKILL before: its first, two in its middle, its last.
TREE_KILLS = [len(PLUMBING), len(PLUMBING) + 15, len(PLUMBING) + 30, len(PLUMBING) + TREE_STEPS - 1]


@pytest.fixture(scope="module", autouse=True)
def forwarding_off(topo):
    """IPv4 forwarding off on the daemon's interface, as on a host that does not route: the
    sandboxes turn it on and must turn it back off."""
    topo.client.run("sysctl", "-w", f"net.ipv4.conf.{topo.interface}.forwarding=0").ok()
    return "0"


@pytest.fixture(autouse=True)
def disarmed(linkcondd):
    """No fault a test armed outlives it."""
    yield
    if linkcondd.running:
        linkcondd.api.disarm_fault()


def nothing_left_checks(check, daemon, topo, forwarding_before: str, when: str) -> None:
    """Three checks: no veth or NAT table of a sandbox (read from the kernel), only the
    default condition, IPv4 forwarding on the daemon's interface as before."""
    check.equal(f"{when}: no sandbox veth or NAT table left", [], wait_no_leftovers(topo.client))
    check.equal(f"{when}: only the default condition, off", [f"{topo.interface}=off"], condition_summary(daemon))
    check.equal(f"{when}: IPv4 forwarding on {topo.interface} as before", forwarding_before,
                forwarding(topo.client, topo.interface))


def sleeping_run(daemon, topo, seconds: int, err=None) -> subprocess.Popen:
    return start_isolated(daemon, topo.client, "LC Test A", ["sleep", str(seconds)], err=err)


def end_run(client: subprocess.Popen) -> None:
    """Ends a run client and whatever it started (each by its process id)."""
    children = descendants(client.pid) if client.poll() is None else []
    kill_pids([client.pid, *children])
    client.wait(30)


# ---------------------------------------------------------------- two at once

#: What each sandbox runs once the test lets it go: round trips to the server's echo through its
#: NAT, its IPv6 tried, then (once the test has routed the sandboxes' network from the server) a
#: stream each way, then it waits to be released, so that its kernel state can be read while it
#: lives. The test lets one go at a time and only once both are built: a round trip timed while
#: the daemon builds the other sandbox measured 4.4 ms over.
SANDBOX_SCRIPT = r"""
set -e
w={work}; n={name}
while [ ! -e "$w/$n.go" ]; do sleep 0.1; done
{python} {probe} rtt --target udp:{s4}:7 --rounds 20 --interval 0.05 --timeout 1 >"$w/$n.rtt.json"
{python} -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("{s6}", 7)); print("sent")
except OSError as e:
    print(e.strerror)
' >"$w/$n.v6.txt"
touch "$w/$n.ready"
while [ ! -e "$w/routed" ]; do sleep 0.1; done
{python} {probe} oneway --host {s4} --ctl {ctl} --rate 20 --duration 4 >"$w/$n.oneway.json"
touch "$w/$n.measured"
while [ ! -e "$w/release" ]; do sleep 0.1; done
"""

#: Each sandbox's profile, and what it adds one way per direction (None: nothing arrives).
SANDBOXED = {"a": ("LC Test A", {"up": 40, "down": 60}), "b": ("Black Hole", {"up": 0, "down": None})}


def delay_tolerance(delay_ms: float) -> float:
    """±(1.5 ms + 0.5%): qemu's timers fire up to about a millisecond late, and the sandbox's path
    has one more veth hop and a NAT than the host's baseline (measured: docs/testing.md)."""
    return oneway.delay_tolerance(delay_ms, floor_ms=1.5)


@pytest.mark.debian_kernel
@pytest.mark.timed
@pytest.mark.checks(23)
def test_two_sandboxes_beside_the_unshaped_host(check, daemon, topo, work, server, probes, unshaped_oneway,
                                                  unshaped_rtt, forwarding_off):
    """LC Test A (40 ms up, 60 ms down) and Black Hole in two sandboxes at once: each listed, each
    reaching the server through its NAT as its profile says, one way per direction; the host's
    own traffic meanwhile unshaped, IPv4 and IPv6; the sandboxes' IPv6 reaching nothing; and once
    their commands exit, nothing of them left."""
    for mark in ("routed", "release"):
        (work / mark).unlink(missing_ok=True)
    echoed_before = server.echoed().get("udp/7", 0)
    clients = {}
    for name, (profile, _) in SANDBOXED.items():
        for suffix in ("go", "ready", "measured"):
            (work / f"{name}.{suffix}").unlink(missing_ok=True)
        script = SANDBOX_SCRIPT.format(work=work, name=name, python=SYSTEM_PYTHON, probe=PROBE_FILE, s4=topo.s4,
                                       s6=topo.s6, ctl=server.ctl)
        clients[name] = start_isolated(daemon, topo.client, profile, ["sh", "-c", script],
                                       err=work / f"{name}.err", out=work / f"{name}.out")
    try:
        listed = wait_listed(daemon, 2)
        check.equal("both sandboxes listed while their commands run", ["Black Hole", "LC Test A"],
                    sorted(c["profile"]["name"] for c in listed or []))
        for name in SANDBOXED:
            (work / f"{name}.go").touch()
            wait_until(lambda: (work / f"{name}.ready").exists(), 180, 0.2)
        # The server's route to the sandboxes' network: each stream down reaches its sandbox
        # directly, as replies through the NAT do.
        topo.server.ip("route", "add", "10.254.0.0/16", "via", topo.c4)
        (work / "routed").touch()
        host = {family: probes.oneway(address, rate=20, duration=4) for family, address in families(topo.s4, topo.s6)}
        wait_until(lambda: all((work / f"{n}.measured").exists() for n in SANDBOXED), 180, 0.2)
        black_hole = next((c for c in listed or [] if c["profile"]["name"] == "Black Hole"), None)
        inside = Device("eth0", "lc-eth0", pid=command_pid(black_hole)) if black_hole else None
        dropped = qdisc(inside, "7a10:", inside.ifb)["drops"] if inside else None
    finally:
        (work / "release").touch()
        codes = {n: c.wait(120) for n, c in clients.items()}
        topo.server.ip("route", "flush", "10.254.0.0/16")
    echoed = server.echoed().get("udp/7", 0)

    check.equal("run --isolated: each command's own status", {"a": 0, "b": 0}, codes)
    a_rtt = read_json(work / "a.rtt.json")[0]
    check.equal("LC Test A's sandbox: replies through its NAT", 20, a_rtt["received"])
    # Timed by Python in the sandbox, with the other sandbox's probe waiting on timeouts beside it:
    # the one-way checks below hold the precision, this one the way through NAT.
    check.between("LC Test A's sandbox: round trip through its NAT (the fastest of 20), against the host's unshaped one",
                  minus(a_rtt["min_ms"], unshaped_rtt["IPv4"]), 99, 104, "ms", promised="100 ms (40 up + 60 down)",
                  why="netem never sends early; the probe's own timing")
    b_rtt = read_json(work / "b.rtt.json")[0]
    check.equal("Black Hole's sandbox: no reply", 0, b_rtt["received"])
    check.equal("Black Hole's sandbox: the server answered each of its 20 (and A's 20)", 40, echoed - echoed_before)
    for name, (profile, added) in SANDBOXED.items():
        measured = read_json(work / f"{name}.oneway.json")
        for direction, delay in added.items():
            got = measured[direction]
            if delay is None:
                check.equal(f"{profile}'s sandbox {direction}: nothing arrives (of {got['sent']} the server sent)",
                            0, got["received"])
                check.at_least(f"{profile}'s sandbox {direction}: its netem dropped them", dropped, got["sent"], "packets")
                continue
            check.equal(f"{profile}'s sandbox {direction}: every packet arrived", got["sent"], got["received"])
            check.near(f"{profile}'s sandbox IPv4 {direction}: one-way delay (10th percentile)",
                       minus(got.get("quantiles_ms", {}).get("0.1"), unshaped_oneway["IPv4", direction]), delay,
                       delay_tolerance(delay))
        check.contains(f"{profile}'s sandbox: its IPv6 reaches nothing (sandboxes are IPv4 only)",
                       (work / f"{name}.v6.txt").read_text(), "unreachable")
    for family, measured in host.items():
        for direction in ("up", "down"):
            got = measured[direction]
            check.near(f"the host's own traffic meanwhile, {family} {direction}: unshaped",
                       minus(got.get("quantiles_ms", {}).get("0.1"), unshaped_oneway[family, direction]), 0, 1.5,
                       why=f"{got['received']} of {got['sent']}; within 1.5 ms of the baseline")
    nothing_left_checks(check, daemon, topo, forwarding_off, "after both commands exit")


# ---------------------------------------------------------------- what is left

@pytest.mark.debian_kernel
@pytest.mark.checks(7)
def test_two_sandboxes_capture_their_own_packets(check, daemon, topo, work):
    """Two `run --isolated --capture FILE -- ping` at once, with different profiles: each trace
    holds its own command's echoes (every request from its own sandbox's address, each answered)
    and none of the other's packets, and begins with its own profile marked."""
    runs = {"a": ("LC Test A", 6), "b": ("LC Test B", 4)}
    files = {name: work / f"sandbox-{name}.pcapng" for name in runs}
    processes = {}
    for name, (profile, count) in runs.items():
        files[name].unlink(missing_ok=True)
        processes[name] = subprocess.Popen(
            topo.client.argv(*daemon.client_argv("run", "--isolated", "--profile", profile, "--capture", str(files[name]), "--",
                                                 "ping", "-4", "-c", str(count), "-i", "0.2", topo.s4)),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = {name: process.communicate(timeout=120)[1].decode(errors="replace") for name, process in processes.items()}
    check.equal("both runs: their commands' exit status, and no word of their captures going wrong",
                {"a": (0, ""), "b": (0, "")},
                {n: (p.returncode, "\n".join(l for l in said[n].splitlines() if "capture" in l)) for n, p in processes.items()})
    traces = {name: read_trace(files[name]) for name in runs}
    sources = {name: sorted({p.addresses[0] for p in trace.echoes("IPv4", "request", "out") if p.addresses})
               for name, trace in traces.items()}
    check.true("each sandbox's requests from one address of its own", all(len(a) == 1 for a in sources.values())
               and sources["a"] != sources["b"], sources, "one each, not the same")
    for name, (profile, count) in runs.items():
        trace, other = traces[name], sources["b" if name == "a" else "a"]
        check.equal(f"{name}: its {count} echoes each way, read without a word", (count, count, ""),
                    (len(trace.echoes("IPv4", "request", "out")), len(trace.echoes("IPv4", "reply", "in")), trace.stderr.strip()))
        strangers = [p.number for p in trace.packets if other and other[0] in p.addresses]
        check.equal(f"{name}: none of the other sandbox's packets", [], strangers)
    check.equal("each trace begins with its own profile marked", {n: True for n in runs},
                {n: bool(t.notes) and f"{runs[n][0]} (in force as the capture began)" in t.notes[0].comment for n, t in traces.items()})


@pytest.mark.debian_kernel
@pytest.mark.checks(5)
def test_killed_run_client_leaves_nothing(check, daemon, topo, forwarding_off):
    """A SIGKILL of the run client ends its lease: the daemon takes the sandbox apart."""
    client = sleeping_run(daemon, topo, 300)
    listed = None
    try:
        listed = wait_listed(daemon, 1)
        during = leftovers(topo.client)
        check.true("a running sandbox has its veth and NAT table", any(n.startswith("lcsb") for n in during)
                   and any(n.startswith("linkcond_sandbox_") for n in during), during, "lcsbN and linkcond_sandbox_N")
        client.send_signal(signal.SIGKILL)
        client.wait(30)
        check.true("the run client died of SIGKILL", client.returncode == -signal.SIGKILL, client.returncode, -9)
        nothing_left_checks(check, daemon, topo, forwarding_off, "after SIGKILL of the run client")
    finally:
        end_run(client)
        if listed:
            kill_pids([command_pid(listed[0])])


@pytest.mark.debian_kernel
@pytest.mark.checks(6)
def test_daemon_sigkill_and_restart_leaves_nothing(check, daemon, topo, work, forwarding_off):
    """A SIGKILL of the daemon leaves the sandbox's objects; the restarted daemon removes them,
    turns forwarding back off, and records that it ended the sandbox's condition. The run client
    says it lost the daemon, and lets its command run on (docs/api.md)."""
    client = sleeping_run(daemon, topo, 300, err=work / "killed-daemon.err")
    listed = None
    try:
        listed = wait_listed(daemon, 1)
        daemon.kill()
        check.true("after SIGKILL of the daemon: the sandbox's objects are still there", len(leftovers(topo.client)) == 2,
                   leftovers(topo.client), "its veth and NAT table")
        daemon.start()
        nothing_left_checks(check, daemon, topo, forwarding_off, "after the restart")
        ended = [e for e in daemon.api.history(20) if str(e.get("condition", "")).startswith("pid/")]
        check.true("the history has the restart ending the sandbox's condition",
                   any(e.get("to") == "off" and e.get("reason") == "startup" for e in ended),
                   [(e.get("to"), e.get("reason")) for e in ended], "off, startup")
        said = wait_until(lambda: "lost the connection to linkcondd" in (work / "killed-daemon.err").read_text(), 30)
        check.true("the run client says it lost the daemon, and its command runs on", bool(said) and client.poll() is None,
                   f"{(work / 'killed-daemon.err').read_text().strip()!r}, client {'running' if client.poll() is None else 'exited'}",
                   "'lost the connection to linkcondd', running")
    finally:
        end_run(client)
        if listed:
            kill_pids([command_pid(listed[0])])


@pytest.mark.debian_kernel
@pytest.mark.checks(1)
def test_build_steps(check, daemon, topo):
    """A sandbox's build takes its 10 steps of plumbing and a whole interface's tree of 51,
    counted by the daemon: the loops below cover each."""
    before = daemon.api.executed_steps()
    client = sleeping_run(daemon, topo, 300)
    listed = None
    try:
        listed = wait_listed(daemon, 1)
        check.equal("a sandbox's build: steps (counted by the daemon)", len(PLUMBING) + TREE_STEPS,
                    daemon.api.executed_steps() - before)
    finally:
        end_run(client)
        if listed:
            kill_pids([command_pid(listed[0])])
        wait_no_leftovers(topo.client)


@pytest.mark.checks(5)
@pytest.mark.parametrize("step", range(len(PLUMBING)))
def test_refusal_at_each_plumbing_step(check, daemon, topo, work, forwarding_off, step):
    """The kernel refusing a step of joining the sandbox to the host: the run fails at once,
    naming the step and the refusal, and nothing of the sandbox is left."""
    daemon.api.arm_fault(step, "fail")
    result = run(isolated_argv(daemon, topo.client, "LC Test A", ["true"]), timeout=90)
    check.exit_status(f"a refusal at plumbing step {step}: the run fails", result, "nonzero")
    check.contains(f"a refusal at plumbing step {step}: the run names the refusal", result.err, "fault injected")
    check.contains(f"a refusal at plumbing step {step}: and the step", result.err, PLUMBING[step])
    check.equal(f"after a refusal at plumbing step {step}: nothing of the sandbox left, only the default condition, "
                f"forwarding as before", ([], [f"{topo.interface}=off"], forwarding_off),
                (wait_no_leftovers(topo.client), condition_summary(daemon), forwarding(topo.client, topo.interface)))
    check.equal(f"after a refusal at plumbing step {step}: the daemon runs", True, daemon.running)


@pytest.mark.checks(4)
@pytest.mark.parametrize("step", [*range(len(PLUMBING)), *(pytest.param(k, marks=pytest.mark.debian_kernel) for k in TREE_KILLS)])
def test_sigkill_before_each_step(check, daemon, topo, work, forwarding_off, step):
    """The daemon killed before a step of a sandbox's build: the run client ends by itself, and
    the restarted daemon leaves nothing of the sandbox."""
    daemon.api.arm_fault(step, "kill")
    client = sleeping_run(daemon, topo, 300)
    children: list[int] = []
    try:
        exit_status = daemon.wait_exit(120)
        check.equal(f"SIGKILL armed before step {step}: the daemon died of it", 137, exit_status)
        children = descendants(client.pid)
        check.true(f"SIGKILL before step {step}: the run client ended by itself within 30 s",
                   wait_until(lambda: client.poll() is not None, 30) is not None, client.poll(), "exited")
        if exit_status is None:
            daemon.kill()
        daemon.start()
        check.equal(f"SIGKILL before step {step}, restarted: nothing of the sandbox left, only the default condition, "
                    f"forwarding as before", ([], [f"{topo.interface}=off"], forwarding_off),
                    (wait_no_leftovers(topo.client), condition_summary(daemon), forwarding(topo.client, topo.interface)))
        check.equal(f"SIGKILL before step {step}, restarted: the daemon runs", True, daemon.running)
    finally:
        end_run(client)
        kill_pids(children)


# ---------------------------------------------------------------- a host firewall

DOCKER_FORWARD = """
table ip filter {
    chain DOCKER-USER {
    }
    chain FORWARD {
        type filter hook forward priority filter; policy drop;
        jump DOCKER-USER
    }
}
"""
DOCKER_WARNING = ("warning: the host's firewall drops forwarded packets (nft table ip filter, chain FORWARD, "
                  "policy drop; Docker sets it)")
DOCKER_FIX = "iptables -I DOCKER-USER -i lcsb+ -j ACCEPT"


@pytest.mark.debian_kernel
@pytest.mark.checks(8)
def test_forward_drop_chain_warning(check, daemon, topo, server, forwarding_off):
    """Behind a forward chain that drops by default, laid out as Docker's: the sandbox reaches
    nothing and its run says so, naming the chain and the fix; with the fix's rules the sandbox
    is reached and nothing is said."""
    probe_argv = [SYSTEM_PYTHON, PROBE_FILE, "rtt", "--target", f"udp:{topo.s4}:7", "--rounds", "3", "--interval",
                  "0.05", "--timeout", "1"]
    topo.client.run("nft", "-f", "-", input=DOCKER_FORWARD).ok()
    try:
        echoed = server.echoed().get("udp/7", 0)
        dropped = run(isolated_argv(daemon, topo.client, "LC Test A", probe_argv), timeout=120)
        check.exit_status("behind Docker's FORWARD drop: the run ends", dropped, 0)
        check.equal("behind Docker's FORWARD drop: replies", 0, read_rtt(dropped.out))
        check.equal("behind Docker's FORWARD drop: nothing reached the server", 0, server.echoed().get("udp/7", 0) - echoed)
        check.contains("behind Docker's FORWARD drop: the run warns, naming the chain", dropped.err, DOCKER_WARNING)
        check.contains("and the fix", dropped.err, DOCKER_FIX)
        topo.client.run("nft", "insert", "rule", "ip", "filter", "DOCKER-USER", "oifname", '"lcsb*"', "ct", "state",
                        "established,related", "accept").ok()
        topo.client.run("nft", "insert", "rule", "ip", "filter", "DOCKER-USER", "iifname", '"lcsb*"', "accept").ok()
        allowed = run(isolated_argv(daemon, topo.client, "LC Test A", probe_argv), timeout=120)
        check.equal("with the fix's rules in DOCKER-USER: replies", 3, read_rtt(allowed.out))
        check.absent("with the fix's rules: no warning", allowed.err, "firewall drops forwarded")
    finally:
        topo.client.run("nft", "delete", "table", "ip", "filter")
    check.equal("and nothing of either sandbox left", [], wait_no_leftovers(topo.client))


def read_rtt(out: str) -> int | None:
    """The replies a probe rtt printed, None when it printed none."""
    try:
        return json.loads(out)[0]["received"]
    except (ValueError, LookupError, TypeError):
        return None


# ---------------------------------------------------------------- what a member may not ask

@pytest.fixture
def member_processes():
    """Processes a test starts as the member, killed by id at its end."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(30)


@pytest.mark.debian_kernel
@pytest.mark.checks(5)
def test_member_sandbox_refusals(check, daemon, topo, member_processes):
    """A group member asks for sandboxes it may not have: another user's process (pid 1), its own
    process in the host's namespace, its own fresh namespace that already has a device, a
    process that does not exist. Each is refused with its code, and nothing is built."""
    run(["modprobe", "dummy"]).ok()
    links_before = topo.client.run("ip", "-o", "link", "show").ok().out.count("\n")
    in_host = subprocess.Popen(topo.client.argv(*as_member(["sleep", "300"])))
    with_device = subprocess.Popen(as_member(["unshare", "-rn", "sh", "-c", "ip link add d0 type dummy && exec sleep 300"]))
    member_processes += [in_host, with_device]
    # Until the device exists in the member's namespace.
    wait_until(lambda: "d0" in run(["nsenter", "-t", str(with_device.pid), "-n", "ip", "-o", "link"]).out, 30, 0.2)
    time.sleep(0.5)
    answers = {}
    for label, pid in (("pid 1", 1), ("own, host's namespace", in_host.pid), ("own, with a device", with_device.pid),
                       ("no such process", 4194304)):
        holder = member_lease(daemon, pid)
        member_processes.append(holder)
        answers[label] = first_answer(holder)
    check.equal("pid 1 (root's, the host's namespace): refused", "sandbox-not-yours", answers["pid 1"])
    check.equal("the member's own process in the host's namespace: refused", "sandbox-namespace-in-use",
                answers["own, host's namespace"])
    check.equal("the member's own fresh namespace with a device in it: refused", "sandbox-namespace-in-use",
                answers["own, with a device"])
    check.equal("a process that does not exist: refused (no process of the member's)", "sandbox-not-yours",
                answers["no such process"])
    check.equal("after the refusals: only the default condition, the links as before, no sandbox objects",
                ([f"{topo.interface}=off"], links_before, []),
                (condition_summary(daemon), topo.client.run("ip", "-o", "link", "show").ok().out.count("\n"),
                 leftovers(topo.client)))


@pytest.mark.debian_kernel
@pytest.mark.checks(4)
def test_member_sandbox_flood(check, daemon, topo, member_processes, forwarding_off):
    """16 sandbox leases at once, each on a fresh namespace of the member's: each granted, with a
    veth and NAT table of its own; their connections closed, every one is gone."""
    sleepers = [subprocess.Popen(as_member(["unshare", "-rn", "sleep", "300"])) for _ in range(16)]
    member_processes += sleepers
    time.sleep(1)
    holders = [member_lease(daemon, s.pid) for s in sleepers]
    member_processes += holders
    granted = [first_answer(h, 180) for h in holders]
    objects = leftovers(topo.client)
    check.equal("a flood of 16 sandbox leases: each granted", ["active"] * 16, granted)
    check.equal("each with its own veth and NAT table", (16, 16),
                (sum(n.startswith("lcsb") for n in objects), sum(n.startswith("linkcond_sandbox_") for n in objects)))
    for holder in holders:
        holder.kill()
        holder.wait(30)
    check.equal("their connections closed: every sandbox gone, only the default condition, forwarding as before",
                ([], [f"{topo.interface}=off"], forwarding_off),
                (wait_no_leftovers(topo.client, 120), condition_summary(daemon), forwarding(topo.client, topo.interface)))
    check.equal("the daemon is still running", True, daemon.running)
