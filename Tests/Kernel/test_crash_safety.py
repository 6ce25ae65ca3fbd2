"""Crash safety and rollback: a daemon killed at any moment of a change finds, once restarted, the
old condition or the new one whole, never half of one; a change the kernel refuses at any step
is rolled back to the condition before it.

* SIGKILL before each single netlink step of a build (off -> Slow Net), a switch (Slow Net ->
  Nasty Net) and a teardown (Nasty Net -> off): the daemon kills itself there
  (--enable-fault-injection). The daemon counts the steps, and the counts are pinned (they are
  Tests/ShapingTests/TransitionTests.swift's), so that the loops cannot quietly shrink.
* SIGKILL from outside, at random moments of random changes.
* After every restart: the tree is the old condition's or the new one's, filters included
  (compared with reference trees read once), the status names that condition, there is one IFB
  exactly when a condition is in force, and datagrams each way and in each family go through
  linkcond's netem of their direction exactly when a condition is in force, or reach the other
  end with no linkcond netem on their way when none is (harness/datagrams.py).
* A netlink failure injected before each step of a build and of a switch: the change fails with
  the object and the kernel's reason named, and the tree, the IFB and the status are as before.

Functional: nothing here is timed.
"""

from __future__ import annotations

import difflib
import random
import re
import threading
import time
from collections import Counter

import pytest

from harness.api import NoAnswer
from harness.datagrams import DIRECTIONS, FAMILIES, DatagramPaths
from harness.system import HarnessError
from harness.tc import tree_text

CHECKS = 72

DAEMON_ARGS = ["--enable-fault-injection"]

#: Netlink steps per change, as Tests/ShapingTests/TransitionTests.swift (KernelSuiteStepCountTests)
#: pins them: a plan that changes shape changes both.
EXPECTED_STEPS = {("off", "Slow Net"): 51, ("Slow Net", "Nasty Net"): 11, ("Nasty Net", "off"): 3}
PROFILES_USED = ("Slow Net", "Nasty Net", "Black Hole")
#: A refusal as the daemon and the client word it: the step (what it does to which object, on
#: which device), then the kernel's reason.
REFUSAL = re.compile(r"the kernel refused to (create ifb [^ :]+|delete device [^ :]+"
                     r"|(add|change|delete|replace) .+ on [^ :]+): ")
INJECTED = "fault injected"
#: How long a daemon armed to kill itself may take to be gone: a liveness limit.
EXIT_LIMIT = 10


# ---------------------------------------------------------------- the module's fixtures

@pytest.fixture(scope="module")
def references(linkcondd, device):
    """Each condition's tree, as the daemon builds it from off (filters included), read once;
    off's is no tree at all."""
    if not linkcondd.running:
        linkcondd.start()
    api = linkcondd.api
    api.must(api.request("DELETE", "/v1/conditions?force=1"))
    trees = {"off": []}
    for profile in PROFILES_USED:
        api.must(api.activate(profile))
        trees[profile] = tree_text(device)
        api.must(api.off())
    for profile, tree in trees.items():
        print(f"reference tree of {profile}: {len(tree)} objects")
    return trees


@pytest.fixture(scope="module")
def paths(topo, device):
    """Datagrams each way and family, from the harness's own sockets."""
    opened = DatagramPaths(topo, device)
    yield opened
    opened.close()


# ---------------------------------------------------------------- changes

def change(daemon, profile: str):
    """The request that puts PROFILE in force ("off": turns the condition off)."""
    return daemon.api.off() if profile == "off" else daemon.api.activate(profile)


def put(daemon, profile: str) -> None:
    daemon.api.must(change(daemon, profile))


def steps_of(daemon, start: str, target: str) -> int:
    """Netlink steps of the change START -> TARGET, counted by the daemon."""
    put(daemon, start)
    before = daemon.api.executed_steps()
    put(daemon, target)
    return daemon.api.executed_steps() - before


def ifb_devices(topo) -> list[str]:
    """Every IFB device of the client's namespace."""
    listed = topo.client.ip("-o", "link", "show", "type", "ifb").out
    return sorted(line.split(":")[1].strip().split("@")[0] for line in listed.splitlines() if line.strip())


def differences(reference: list[str] | None, found: list[str], lines: int = 12) -> str:
    diff = difflib.unified_diff(reference or [], found, "reference", "found", lineterm="", n=0)
    return "\n".join("      " + line for line in list(diff)[2:2 + lines])


class Restarts:
    """Restarts after a kill, tallied: what each restart finds is checked against the old
    condition and the new one; each problem is printed with what was seen."""

    def __init__(self, daemon, topo, device, paths, references):
        self.daemon, self.topo, self.device, self.paths, self.references = daemon, topo, device, paths, references
        self.count = 0
        self.half_at_kill = 0
        self.whole = 0
        self.ifb_right = 0
        self.as_wanted = Counter()
        self.now = "off"
        self.found_whole = True

    def after_kill(self, start: str, target: str) -> str:
        """The daemon was just killed during START -> TARGET: read the tree it left, restart it,
        and check what the restarted daemon has in force. Returns the condition in force."""
        self.count += 1
        half_done = tree_text(self.device) not in (self.references[start], self.references[target])
        self.half_at_kill += half_done
        began = time.monotonic()
        self.daemon.start()
        started = time.monotonic() - began
        found = tree_text(self.device)
        now = self.daemon.api.profile_in_force()
        ifbs = ifb_devices(self.topo)
        label = f"restart {self.count} ({start} -> {target})"

        self.found_whole = any(found == self.references[p] and now == p for p in (start, target))
        self.whole += self.found_whole
        if not self.found_whole:
            print(f"{label}: status {now}, {len(found)} objects, neither {start}'s nor {target}'s tree; "
                  f"{now}'s reference (-) against the tree found (+):\n{differences(self.references.get(now), found)}")
            startup = [line for line in self.daemon.log_text().rsplit("--- linkcondd start", 1)[-1].splitlines()
                       if "startup:" in line]
            print("    what the restarted daemon said of the tree it found:\n      " + "\n      ".join(startup[:12]))

        wanted_ifbs = [] if now == "off" else [self.topo.ifb]
        if ifbs == wanted_ifbs:
            self.ifb_right += 1
        else:
            print(f"{label}: status {now}, IFB devices {ifbs}, expected {wanted_ifbs}")

        wanted = "unshaped" if now == "off" else "shaped"
        began = time.monotonic()
        passages = self.paths.passages()
        print(f"{label}: {'a half-done' if half_done else 'a whole'} tree at the kill; restarted in {started:.2f} s "
              f"with {now} in force; probed in {time.monotonic() - began:.2f} s")
        for (direction, family), passage in passages.items():
            if passage.state == wanted:
                self.as_wanted[direction, family] += 1
            else:
                print(f"{label}: status {now}: {direction} {family} datagrams {passage.state}, expected {wanted}")
        self.now = now
        return now

    def checks(self, check, kills: int) -> None:
        """The restarts' checks: 2 + one per direction and family."""
        check.equal("restart finds the old or the new condition whole (tree, filters, status)", kills, self.whole,
                    tolerance="exact: every restart")
        check.equal("restart: one IFB exactly when a condition is in force", kills, self.ifb_right)
        for direction in DIRECTIONS:
            for family in FAMILIES:
                check.equal(f"restart: {direction}link {family} datagrams shaped exactly when a condition is in force",
                            kills, self.as_wanted[direction, family],
                            tolerance="exact: all through linkcond's netem when in force; all delivered, no netem, when off")


# ---------------------------------------------------------------- SIGKILL before each step

KILL_RANGES = [
    pytest.param("off", "Slow Net", 0, 16, id="build-steps-0-16"),
    pytest.param("off", "Slow Net", 17, 33, id="build-steps-17-33"),
    pytest.param("off", "Slow Net", 34, 50, id="build-steps-34-50"),
    pytest.param("Slow Net", "Nasty Net", 0, 10, id="switch"),
    pytest.param("Nasty Net", "off", 0, 2, id="teardown"),
]


@pytest.mark.checks(9)
@pytest.mark.parametrize("start,target,first,last", KILL_RANGES)
def test_sigkill_before_each_step(check, daemon, topo, device, paths, references, start, target, first, last):
    """The daemon SIGKILLs itself before each step FIRST..LAST of START -> TARGET and is
    restarted: the old condition or the new, whole, and the packets shaped accordingly."""
    steps = steps_of(daemon, start, target)
    check.equal(f"{start} -> {target}: steps (counted by the daemon)", EXPECTED_STEPS[start, target], steps)
    last = min(last, steps - 1)
    wanted = max(0, last - first + 1)
    restarts = Restarts(daemon, topo, device, paths, references)
    restarts.now = target
    killed = 0
    slowest = 0.0
    for k in range(first, last + 1):
        if not (restarts.found_whole and restarts.now == start):
            put(daemon, start)
        daemon.api.arm_fault(k, "kill")
        began = time.monotonic()
        try:
            answer = f"HTTP {change(daemon, target).status}"
        except NoAnswer:
            answer = "no answer"
        status = daemon.wait_exit(EXIT_LIMIT)
        if status != 137:
            print(f"{start} -> {target}: no SIGKILL at step {k} of {steps}: {answer}, exit {status}, "
                  f"daemon steps {daemon.api.executed_steps() if daemon.running else '-'}")
            if daemon.running:
                daemon.api.disarm_fault()
            else:
                daemon.start()
            restarts.found_whole = False
            continue
        killed += 1
        slowest = max(slowest, time.monotonic() - began)
        restarts.after_kill(start, target)
    print(f"{start} -> {target}: the slowest change until the kill took {slowest:.2f} s")
    check.equal(f"{start} -> {target}: killed before each of steps {first} to {last}", wanted, killed,
                tolerance=f"exact, of {steps} steps")
    # A kill before the first step leaves the old tree; each later one, a half-done tree that the
    # restart had real work to do with.
    check.equal(f"{start} -> {target}: a half-done tree at the kill", killed - (1 if first == 0 else 0),
                restarts.half_at_kill, tolerance="exact: every kill but one before the first step")
    restarts.checks(check, killed)


# ---------------------------------------------------------------- SIGKILL at random moments

ROUNDS = 40


@pytest.mark.checks(8)
def test_sigkill_at_random_moments(check, daemon, topo, device, paths, references):
    """SIGKILL from outside at a random moment of a change (or just after it) between random
    conditions, then a restart: the old condition or the new, whole, each time."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    print(f"random kills: seed {seed}")
    restarts = Restarts(daemon, topo, device, paths, references)
    alive_at_kill = 0
    current = "off"
    for _ in range(ROUNDS):
        target = rng.choice([p for p in ("off", *PROFILES_USED) if p != current])
        # The moment: within how long this very change takes (timed just before, then undone),
        # so that many kills land while its steps run, whichever change it is.
        began = time.monotonic()
        put(daemon, target)
        lasted = time.monotonic() - began
        put(daemon, current)
        moment = rng.uniform(0, lasted)
        client = threading.Thread(target=_ignore_no_answer, args=(change, daemon, target))
        client.start()
        time.sleep(moment)
        alive_at_kill += daemon.running
        daemon.kill()
        client.join(60)
        print(f"killed {moment * 1000:.1f} ms into {current} -> {target} (which took {lasted * 1000:.1f} ms)")
        current = restarts.after_kill(current, target)
    check.equal("random SIGKILL: the daemon was running at each kill", ROUNDS, alive_at_kill)
    # Uniform moments over a change land inside its steps about one time in six (builds' many
    # steps take most of one; a switch's few, little): 40 rounds all miss with p < 1e-3.
    check.at_least("random SIGKILL: kills that left a half-done tree", restarts.half_at_kill, 1, "kills",
                   why="the restarts had work to do")
    restarts.checks(check, ROUNDS)


def _ignore_no_answer(function, *args) -> None:
    try:
        function(*args)
    except NoAnswer:
        pass


# ---------------------------------------------------------------- a netlink failure at each step

@pytest.mark.checks(7)
@pytest.mark.parametrize("start,target", [pytest.param("off", "Slow Net", id="build"),
                                          pytest.param("Slow Net", "Nasty Net", id="switch")])
def test_failure_at_each_step_rolls_back(check, daemon, topo, device, references, start, target):
    """A netlink failure injected before each step of START -> TARGET in turn: each time the
    change fails naming the object and the kernel's reason, and the tree (filters included),
    the IFB and the status are START's as before."""
    steps = steps_of(daemon, start, target)
    check.equal(f"{start} -> {target}: steps (counted by the daemon)", EXPECTED_STEPS[start, target], steps)
    wanted_ifbs = [] if start == "off" else [topo.ifb]
    refused = named = reasoned = tree_kept = ifb_kept = status_kept = 0
    for k in range(steps):
        put(daemon, start)
        daemon.api.arm_fault(k, "fail")
        reply = change(daemon, target)
        message = _error_message(reply)
        found, ifbs, now = tree_text(device), ifb_devices(topo), daemon.api.profile_in_force()
        refused += reply.status == 500
        named += bool(REFUSAL.search(message))
        reasoned += INJECTED in message
        tree_kept += found == references[start]
        ifb_kept += ifbs == wanted_ifbs
        status_kept += now == start
        if not (reply.status == 500 and REFUSAL.search(message) and INJECTED in message
                and found == references[start] and ifbs == wanted_ifbs and now == start):
            print(f"{start} -> {target} failing at step {k} of {steps}: HTTP {reply.status} {message!r}, "
                  f"status {now}, IFB devices {ifbs}; {start}'s reference (-) against the tree (+):\n"
                  f"{differences(references[start], found)}")
    daemon.api.disarm_fault()
    check.equal(f"{start} -> {target} failing at each step: refused (HTTP 500)", steps, refused)
    check.equal(f"{start} -> {target} failing at each step: the error names the step and its object", steps, named,
                tolerance="exact: 'the kernel refused to <step> on <device>: '")
    check.equal(f"{start} -> {target} failing at each step: the error gives the kernel's reason", steps, reasoned)
    check.equal(f"{start} -> {target} failing at each step: {start}'s tree kept, filters included", steps, tree_kept)
    check.equal(f"{start} -> {target} failing at each step: IFB as before", steps, ifb_kept)
    check.equal(f"{start} -> {target} failing at each step: status still {start}", steps, status_kept)


def _error_message(reply) -> str:
    """An error document's message, else the body as it came."""
    try:
        return str(reply.json["error"]["message"])
    except (HarnessError, KeyError, TypeError):
        return reply.body.decode(errors="replace")


@pytest.mark.checks(5)
def test_injected_failure_reaches_the_client(check, daemon, device, references):
    """`linkcond activate` whose change the kernel refuses (a failure injected at step 3 of the
    switch): it fails, saying which step on which object and the kernel's reason, and the
    condition before it stays."""
    put(daemon, "Slow Net")
    daemon.api.arm_fault(3, "fail")
    result = daemon.cli("activate", "Nasty Net")
    daemon.api.disarm_fault()
    check.exit_status("injected failure: the client fails", result, "nonzero")
    check.contains("injected failure: the client names the kernel's reason", result.err, INJECTED)
    named = REFUSAL.search(result.err)
    check.true("injected failure: the client names the step and its object", bool(named),
               named.group(0) if named else result.err.strip()[:200], "the kernel refused to <step> on <device>: ")
    check.equal("injected failure: status still Slow Net", "Slow Net", daemon.api.profile_in_force())
    check.equal("injected failure: Slow Net's tree kept", references["Slow Net"], tree_text(device))
