"""Switching, stopping and coming back: what a change of condition keeps, what off and a stop
leave, a qdisc linkcond did not make, a reload, the history, and a restart after a crash.

* A switch keeps the tree (its root's counters, the IFB) and the connections open through it.
* Off and SIGTERM leave the interface exactly as it was before the daemon first ran.
* A qdisc of someone else's is refused and left alone, unless replaced on purpose.
* SIGHUP skips a broken profile file and says where; a changed active profile is applied in
  place, each direction's new delay in the kernel.
* The history says who changed what: a lease that expired, one held while its client ran, a
  change asked for by a group member.
* A restarted daemon applies bit-identical values, re-adopting the tree left or rebuilding it
  from its state file alone; a tree missing a redirect filter is rebuilt, and the downlink is
  shaped again for both families, proved with packets counted by the IFB's netem.

Functional: nothing here is timed.
"""

from __future__ import annotations

import difflib
import json
import re
import signal

import pytest

from harness.probes import tcp_target
from harness.system import HarnessError, wait_until
from harness.tc import ifb_bulk_total, qdisc, qdiscs, snapshot, tc, tree_signature, tree_text
from harness.topology import families

CHECKS = 54

RELOAD_PROFILE = "lc-test-reload.yaml"
RELOAD_TEXT = "name: LC Test Reload\nuplink: { delay: 40ms }\ndownlink: { delay: 60ms }\n"
PROFILES = {RELOAD_PROFILE: RELOAD_TEXT}


@pytest.fixture(scope="module", autouse=True)
def pristine(topo, device) -> str:
    """The interface as it was before linkcondd first ran in this module: what off and a stop
    must give back."""
    return snapshot(device)


# ---------------------------------------------------------------- readings

def root_bytes(device, dev: str) -> int | None:
    """Bytes linkcond's root htb (7a00:) on DEV has sent, or None without one."""
    for q in qdiscs(device, dev):
        if q.get("handle") == "7a00:" and q.get("root"):
            return q.get("bytes")
    return None


def ifb_index(topo) -> int:
    """The IFB's interface index; HarnessError when it cannot be read (no IFB)."""
    return json.loads(topo.client.ip("-j", "link", "show", "dev", topo.ifb).out)[0]["ifindex"]


def status_of(daemon) -> tuple[bool, str | None]:
    """(active, profile name) as the daemon's status says."""
    document = daemon.api.status()
    return document.get("active"), (document.get("profile") or {}).get("name")


def netem_delay_ms(device, dev: str) -> float | None:
    """The bulk netem's (7a10:) delay on DEV in ms, as the kernel reads it back."""
    q = qdisc(device, "7a10:", dev)
    try:
        return round(q["options"]["delay"]["delay"] * 1000, 6)
    except (TypeError, KeyError):
        return None


def kernel_values(device) -> str:
    """Every value the kernel reads back of the tree on both devices, counters left out: each
    qdisc's options, each class with its details, and every filter."""
    parts = []
    for dev in (device.interface, device.ifb):
        readings = qdiscs(device, dev, stats=False)
        for q in readings:
            q.get("options", {}).pop("direct_packets_stat", None)
        parts.append(json.dumps(readings, sort_keys=True))
        classes = re.sub(r" direct_packets_stat [0-9]+", "", tc(device, "-d", "class", "show", "dev", dev))
        parts.append("\n".join(sorted(classes.splitlines())))
    parts.append("\n".join(tree_text(device)))
    return "\n".join(parts)


def log_since(daemon, offset: int) -> str:
    return daemon.log_text()[offset:]


def lines_with(text: str, word: str) -> str:
    """TEXT's lines that mention WORD: what a check on a long text shows as measured."""
    return "\n".join(line for line in text.splitlines() if word in line)


def same_interface(check, name: str, expected: str, now: str) -> bool:
    """The interface's snapshot NOW is EXPECTED, its differences printed when not."""
    if now != expected:
        print(f"{name}: the interface differs:")
        print("".join(difflib.unified_diff(expected.splitlines(True), now.splitlines(True), "expected", "now")))
    return check.true(name, now == expected, "identical" if now == expected else "differs (diff above)",
                      "the interface as before")


def in_force(check, name: str, now: str, pristine: str) -> bool:
    """A positive control before a "nothing left": the tree made a difference to remove."""
    return check.true(name, now != pristine, "differs" if now != pristine else "identical",
                      "differs from before (a tree to remove)")


# ---------------------------------------------------------------- a switch

@pytest.mark.checks(8)
def test_switch_keeps_tree_and_open_sessions(check, daemon, topo, device, probes, work):
    """Slow Net -> Nasty Net: the same tree (root htb counters go on, the IFB is the same
    device), Nasty Net's loss in the kernel, and a TCP/22 session per family still echoes."""
    daemon.api.must(daemon.api.activate("Slow Net"))
    sessions = {}
    try:
        for family, host in families(topo.s4, topo.s6):
            until = work / f"session.{family}.go"
            until.unlink(missing_ok=True)
            process = probes.session(tcp_target(host), until)
            sessions[family] = (process, until)
            probes.wait_session_open(process)
        before = {"interface": root_bytes(device, topo.interface), "IFB": root_bytes(device, topo.ifb)}
        index_before = ifb_index(topo)

        switched = daemon.cli("activate", "Nasty Net")
        check.exit_status("activate 'Nasty Net' over Slow Net", switched, 0)
        check.equal("Nasty Net: status", (True, "Nasty Net"), status_of(daemon))
        losses = {dev: (qdisc(device, "7a10:", dev) or {}).get("options", {}).get("loss-random", {}).get("loss")
                  for dev in (topo.interface, topo.ifb)}
        check.equal("Nasty Net: 90% loss in the kernel, up (interface) and down (IFB)", [0.9, 0.9],
                    [losses[topo.interface], losses[topo.ifb]])
        for where, dev in (("interface", topo.interface), ("IFB", topo.ifb)):
            after = root_bytes(device, dev)
            check.true(f"switch keeps the tree: root htb counters on the {where} go on", before[where] is not None
                       and before[where] > 0 and after is not None and after >= before[where],
                       f"{before[where]} -> {after} bytes", "> 0, then not less (no teardown)")
        check.equal("switch keeps the tree: the IFB is the same device", index_before, ifb_index(topo))

        for family, (process, until) in sessions.items():
            until.touch()
            result = probes.session_result(process)
            check.true(f"TCP/22 session over {family} survives the switch",
                       result.get("connected") and result.get("before") and result.get("after"),
                       f"connected={result.get('connected')} before={result.get('before')} after={result.get('after')}"
                       + (f" error={result['error']}" if result.get("error") else ""),
                       "connected, echoes before and after")
    finally:
        for process, until in sessions.values():
            until.touch()
            if process.poll() is None:
                process.kill()
                process.wait()


# ---------------------------------------------------------------- nothing left

@pytest.mark.checks(4)
def test_off_leaves_nothing(check, daemon, device, pristine):
    """`linkcond off` gives back the interface as it was before the daemon ran."""
    daemon.api.must(daemon.api.activate("Slow Net"))
    in_force(check, "Slow Net in force: the interface is not as before", snapshot(device), pristine)
    check.exit_status("off", daemon.cli("off"), 0)
    same_interface(check, "off: nothing left", pristine, snapshot(device))
    check.equal("off: status", (False, None), status_of(daemon))


@pytest.mark.checks(3)
def test_sigterm_leaves_nothing(check, daemon, device, pristine):
    """SIGTERM with a condition in force: the daemon removes it, exits 0, leaves nothing."""
    daemon.api.must(daemon.api.activate("Slow Net"))
    in_force(check, "Slow Net in force: the interface is not as before", snapshot(device), pristine)
    check.equal("SIGTERM: daemon exit status", 0, daemon.stop(signal.SIGTERM))
    same_interface(check, "SIGTERM: nothing left", pristine, snapshot(device))


# ---------------------------------------------------------------- a foreign qdisc

@pytest.mark.checks(8)
def test_foreign_qdisc(check, daemon, topo, device, pristine):
    """A root qdisc linkcond did not make: refused naming it and left as it is; replaced with
    --replace-foreign; off then restores the interface's default."""
    topo.client.tc("qdisc", "add", "dev", topo.interface, "root", "handle", "1:", "htb").ok()
    try:
        foreign = snapshot(device)
        refused = daemon.cli("activate", "Slow Net")
        check.exit_status("foreign qdisc: activate refused", refused, "nonzero")
        check.contains("foreign qdisc: the message names it, which linkcond did not create", refused.err,
                       "root htb qdisc 1: that linkcond did not create")
        same_interface(check, "foreign qdisc: untouched", foreign, snapshot(device))
        check.equal("foreign qdisc: status still off", (False, None), status_of(daemon))
        check.exit_status("activate --replace-foreign", daemon.cli("activate", "Slow Net", "--replace-foreign"), 0)
        roots = [f"{q.get('kind')} {q.get('handle')}" for q in qdiscs(device, stats=False) if q.get("root")]
        check.equal("--replace-foreign: the root is linkcond's", ["htb 7a00:"], roots)
        check.exit_status("off after --replace-foreign", daemon.cli("off"), 0)
        same_interface(check, "off after --replace-foreign: the interface's default qdisc, nothing left", pristine,
                       snapshot(device))
    finally:
        topo.client.tc("qdisc", "del", "dev", topo.interface, "root", "handle", "1:")


# ---------------------------------------------------------------- reload

@pytest.mark.checks(7)
def test_reload(check, daemon, topo, device, profiles):
    """SIGHUP with a broken file: the file is skipped and reported with file:line:field, the
    other profiles load, the condition in force is untouched. A changed active profile is
    applied in place by `linkcond reload`: the new delay each way in the kernel, the same IFB."""
    reload_file = profiles / RELOAD_PROFILE
    broken = profiles / "broken.yaml"
    try:
        reload_file.write_text(RELOAD_TEXT)
        daemon.api.must(daemon.api.request("POST", "/v1/reload"))
        daemon.api.must(daemon.api.activate("LC Test Reload"))
        files = len(list(profiles.glob("*.yaml")))
        index_before = ifb_index(topo)
        tree_before = tree_signature(device)

        broken.write_text("name: Broken\ndownlink:\n  loss: 120%\n")
        daemon.process.send_signal(signal.SIGHUP)
        if not wait_until(lambda: "broken.yaml" in daemon.api.get("/v1/profiles").body.decode(), 15, 0.1):
            raise HarnessError("SIGHUP: the daemon did not re-read the profiles within 15 s")
        check.equal("SIGHUP with a broken file: the condition in force untouched", tree_before, tree_signature(device))
        listing = daemon.cli("list")
        check.contains("SIGHUP: the broken file reported with file:line:field", lines_with(listing.out, "broken.yaml"),
                       "broken.yaml:3: downlink.loss")
        listed = [line for line in listing.out.splitlines() if re.match(r"^[ *] ", line)]
        check.equal("SIGHUP: the other profiles still load", files, len(listed))

        reload_file.write_text(RELOAD_TEXT.replace("40ms", "45ms").replace("60ms", "75ms"))
        reloaded = daemon.cli("reload")
        check.contains("reload: the active condition updated", reloaded.out, "the active condition was updated")
        check.equal("reload: the new uplink delay in the kernel (interface)", 45.0, netem_delay_ms(device, topo.interface))
        check.equal("reload: the new downlink delay in the kernel (IFB)", 75.0, netem_delay_ms(device, topo.ifb))
        check.equal("reload: changed in place, the same IFB", index_before, ifb_index(topo))
    finally:
        broken.unlink(missing_ok=True)
        reload_file.write_text(RELOAD_TEXT)
        if daemon.running:
            daemon.api.request("POST", "/v1/reload")


# ---------------------------------------------------------------- history

def history_lines(daemon) -> list[str]:
    listed = daemon.cli("history", "-n", "200")
    if listed.rc != 0:
        raise HarnessError(f"linkcond history: {listed.describe()}")
    return listed.out.splitlines()


@pytest.mark.checks(3)
def test_history_says_who_changed_what(check, daemon):
    """A lease that expired, a lease held while its client ran and a group member's change,
    each made here, each in `linkcond history` with what, why and who."""
    before = set(history_lines(daemon))
    daemon.cli("activate", "LC Test A", "--for", "1s").ok()
    if not wait_until(lambda: status_of(daemon) == (False, None), 20, 0.1):
        raise HarnessError("the 1 s lease on LC Test A did not end within 20 s")
    daemon.cli("run", "--profile", "LC Test B", "--", "true").ok()
    daemon.cli("activate", "Slow Net", user="member").ok()
    new = "\n".join(line for line in history_lines(daemon) if line not in before)
    print("new history entries:\n" + new)
    check.contains("history: the lease's expiry recorded", lines_with(new, "lease-expired"), "LC Test A -> off  (lease-expired")
    check.contains("history: the lease held while its client ran recorded", lines_with(new, "LC Test B"),
                   "off -> LC Test B  (lease, while its client runs")
    check.contains("history: names the requester of a change", lines_with(new, "-> Slow Net"),
                   "-> Slow Net  (activate)  by uid 65534")


# ---------------------------------------------------------------- restarts

@pytest.mark.checks(7)
def test_restart_applies_identical_values(check, daemon, topo, device, profiles, work):
    """LC Test Exact's values (none of which a display rounds) after SIGKILL and a restart:
    the tree left is re-adopted, bit for bit; with the root qdisc gone too and the profile's
    file away, the tree is rebuilt from the state file alone, bit for bit."""
    exact = profiles / "lc-test-exact.yaml"
    away = work / "lc-test-exact.yaml.away"
    daemon.api.must(daemon.api.activate("LC Test Exact"))
    # The kernel keeps a netem delay in 64 ns ticks and tc prints it to the microsecond: 3.21 ms
    # reads 3.209.
    for direction, dev, delay in (("up (interface)", topo.interface, 3.21), ("down (IFB)", topo.ifb, 12.345)):
        check.near(f"LC Test Exact's delay in the kernel, {direction}", netem_delay_ms(device, dev), delay, 0.002,
                   why="ticks and tc's rounding")
    values = kernel_values(device)
    print("values in the kernel:", values[:600])
    exact.rename(away)
    try:
        daemon.kill()
        offset = len(daemon.log_text())
        daemon.start()
        check.equal("restart: the tree re-adopted, every value bit-identical", values, kernel_values(device))
        check.contains("restart: the daemon says it re-adopted the tree", lines_with(log_since(daemon, offset), "startup:"),
                       "re-adopted the tree an earlier daemon left")
        daemon.kill()
        topo.client.tc("qdisc", "del", "dev", topo.interface, "root").ok()
        offset = len(daemon.log_text())
        daemon.start()
        check.equal("restart: the tree rebuilt from the state file, every value bit-identical", values, kernel_values(device))
        check.contains("restart: the daemon says it rebuilt the tree", lines_with(log_since(daemon, offset), "startup:"),
                       "rebuilt it: the tree left was incomplete")
        check.equal("restart: LC Test Exact in force, its file gone", (True, "LC Test Exact"), status_of(daemon))
    finally:
        away.rename(exact)


@pytest.mark.checks(7)
@pytest.mark.parametrize("family,protocol,priority", [("IPv4", "ip", 1), ("IPv6", "ipv6", 2)])
def test_recovery_rebuilds_missing_redirect(check, daemon, topo, device, probes, family, protocol, priority):
    """An ingress missing its FAMILY redirect to the IFB when the daemon starts: the tree is
    rebuilt whole, the log names the filter that was missing, and the downlink is shaped
    again for both families (each family's datagrams all arrive, each counted by the IFB's
    netem: a family whose redirect is missing passes the IFB by)."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    reference = tree_signature(device)
    daemon.kill()
    topo.client.tc("filter", "del", "dev", topo.interface, "ingress", "prio", str(priority)).ok()
    check.true(f"without its {family} redirect the tree differs", tree_signature(device) != reference,
               tree_signature(device), f"not {reference}")
    offset = len(daemon.log_text())
    daemon.start()
    check.equal(f"restart rebuilds the tree missing its {family} redirect", reference, tree_signature(device))
    for shaped_family, host in families(topo.s4, topo.s6):
        task = f"down:{host}"
        counted_before = ifb_bulk_total(device)
        delivered = probes.loss([task], 50, gap=0.005)[task]
        counted = ifb_bulk_total(device)
        check.equal(f"after the rebuild ({family} redirect missing): {shaped_family} downlink, delivered of 50", 50, delivered)
        check.at_least(f"after the rebuild ({family} redirect missing): {shaped_family} downlink, counted by the IFB's netem",
                       None if counted is None or counted_before is None else counted - counted_before, 50, "packets")
    check.contains(f"the log names the missing {family} redirect", lines_with(log_since(daemon, offset), "differed"),
                   f"the tree on {topo.interface} differed: - filter {protocol} prio {priority} on ffff:")
