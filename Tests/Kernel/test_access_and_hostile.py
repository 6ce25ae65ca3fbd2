"""Who may change the condition, and what users without rights, floods and load cannot do.

Access: a user outside the daemon's group is refused (403 forbidden, from the CLI and the raw
API) and changes nothing, but reads the status; a member may change it. Hostile requests from a
user without rights (Tests/Kernel/hostile.py): every answer a 4xx JSON error, none hangs, the
daemon's state untouched, its memory flat. A user holding every connection it may: root is
still answered promptly, the rest refused with 503, descriptors and memory bounded. Load: 50
clients reading and switching at once, every answer 200, nothing leaked.

Every test starts from Slow Net in force (a change that got through shows in the tree) and
compares trees whole against the ones each profile built at the module's start.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.clients import check_tree, read_json, reference_trees, request_as, status_without_time
from harness.system import (BIN, HARNESS, SYSTEM_PYTHON, as_member, as_stranger, run, spawn, stop,
                            wait_until, writable_by_anyone)

CHECKS = 41
#: Built on the host first (linkcond-bench, which loads and floods the daemon): make test builds it
#: beside the functional phase.
HOST_BUILDS = ("bench",)

BASELINE = "Slow Net"
SWITCHED = ("Nasty Net", "Black Hole", BASELINE)

#: The daemon's limit on one user's open connections (ControlLimits.connectionsPerUser).
CONNECTIONS_PER_USER = 64


@pytest.fixture(scope="module")
def refs(linkcondd, device):
    return reference_trees(linkcondd, device, SWITCHED)


@pytest.fixture
def baseline(daemon, refs):
    """The daemon with Slow Net in force."""
    daemon.api.must(daemon.api.activate(BASELINE))
    return daemon



def settled_fd_count(daemon, limit: float = 10) -> int | None:
    """The daemon's descriptors once their number has held for half a second (a connection a
    client just closed closes on the daemon's side a moment later); None when it could not be read."""
    readings: list[int | None] = []

    def steady() -> bool:
        readings.append(daemon.fd_count())
        return len(readings) >= 5 and len(set(readings[-5:])) == 1
    wait_until(steady, limit, 0.1)
    return readings[-1]


def smaller(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def growth(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


# ---------------------------------------------------------------- access

@pytest.mark.checks(7)
def test_outside_the_group_refused(check, baseline, device, refs):
    """uid 65534 in no group: `activate` refused naming the group, the API's PUT and DELETE
    answered 403 forbidden; the tree, the status and the history unchanged."""
    daemon = baseline
    status_before = status_without_time(daemon.api.status())
    history_before = daemon.api.history(200)
    refused = daemon.cli("activate", "Black Hole", user="stranger")
    check.exit_status("outside the group: activate refused", refused, "nonzero")
    check.contains("outside the group: the refusal names the group", refused.output, "'linkcond'")
    put = request_as("stranger", daemon.socket, "PUT", "/v1/condition", {"profile": "Black Hole"})
    check.equal("outside the group: the API answers PUT", "403 forbidden", f"{put.status} {put.error_code}")
    delete = request_as("stranger", daemon.socket, "DELETE", "/v1/condition?force=1")
    check.equal("outside the group: the API answers DELETE ?force=1", "403 forbidden",
                f"{delete.status} {delete.error_code}")
    check_tree(check, f"outside the group: still {BASELINE}, whole tree", device, refs, BASELINE)
    check.equal("outside the group: status unchanged", status_before, status_without_time(daemon.api.status()))
    check.equal("outside the group: history unchanged", history_before, daemon.api.history(200))


@pytest.mark.checks(2)
def test_outside_the_group_reads_status(check, baseline):
    """Everyone may read: uid 65534 in no group reads the status, which names the profile."""
    read = baseline.cli("status", user="stranger")
    check.exit_status("outside the group: status readable", read, 0)
    check.contains("outside the group: the status names the profile in force", read.out, BASELINE)


@pytest.mark.checks(3)
def test_member_may_change(check, baseline, device, refs):
    """uid 65534 in the daemon's group changes the condition."""
    daemon = baseline
    check.exit_status("in the group: activate Black Hole", daemon.cli("activate", "Black Hole", user="member"), 0)
    check_tree(check, "in the group: Black Hole in force, whole tree", device, refs, "Black Hole")
    check.equal("in the group: status says Black Hole", "Black Hole", daemon.api.profile_in_force())


# ---------------------------------------------------------------- hostile requests

HOSTILE_COUNT = 1500
#: hostile.py sends COUNT requests and 5 cut short (each waits out the daemon's 10 s limit).
HOSTILE_REQUESTS = HOSTILE_COUNT + 5


def hostile_round(daemon, work: Path, number: int) -> dict | None:
    """One round of hostile.py as a user without rights (the same requests each round: its seed
    is fixed); its JSON summary, or None when it wrote none."""
    out = writable_by_anyone(work / f"hostile.{number}.json")
    done = run(as_stranger([SYSTEM_PYTHON, HARNESS / "hostile.py", "--socket", daemon.socket,
                            "--count", HOSTILE_COUNT, "--out", out]), timeout=600)
    summary = read_json(out)
    shown = {k: summary.get(k) for k in ("requests", "answers", "by_status", "failures", "seconds")} if summary else None
    print(f"hostile round {number}: exit {done.rc}, {shown}; {done.err.strip()[-300:]}")
    for example in (summary or {}).get("examples", [])[:5]:
        print(f"    {example}")
    return summary


@pytest.mark.checks(11)
def test_hostile_requests(check, baseline, device, refs, work):
    """Three identical rounds of 1500 hostile requests from a user without rights: each round's
    summary written with every request sent, every answer a 4xx JSON error (a read may be 200)
    and none hung; the daemon up, its status, tree and history unchanged.

    Memory: the first round brings the daemon to its working size (the allocator keeps what a
    peak took); a leak is what each further, identical round adds, so it shows in both of the
    next two, where a one-time step of the allocator (a transparent huge page: 2 MiB) shows in
    one. The smaller of the two growths must stay within 512 KiB (measured: 0 KiB, three runs):
    a leak of 350 bytes a request exceeds it."""
    daemon = baseline
    status_before = status_without_time(daemon.api.status())
    history_before = daemon.api.history(200)
    rss = []
    for number in (1, 2, 3):
        summary = hostile_round(daemon, work, number)
        rss.append(daemon.rss_kib())
        check.equal(f"hostile round {number}: summary written, requests sent", HOSTILE_REQUESTS,
                    (summary or {}).get("requests"))
        check.equal(f"hostile round {number}: answers that broke the rules (not 4xx JSON, 5xx, hung)", 0,
                    (summary or {}).get("failures"))
    check.equal("hostile: the daemon is still running", True, daemon.running)
    check.equal("hostile: status unchanged", status_before, status_without_time(daemon.api.status()))
    check_tree(check, f"hostile: {BASELINE} untouched, whole tree", device, refs, BASELINE)
    check.equal("hostile: history unchanged", history_before, daemon.api.history(200))
    check.at_most("hostile: resident memory, growth in rounds 2 and 3 (the smaller)",
                  smaller(growth(rss[0], rss[1]), growth(rss[1], rss[2])), 512, "KiB",
                  why=f"{rss[0]} -> {rss[1]} -> {rss[2]} KiB; {HOSTILE_REQUESTS} requests a round")


# ---------------------------------------------------------------- a flood of connections

#: Root's requests during the flood, against the same requests without it. Under User-mode
#: Linux, beside other VMs on the host, the median was 5-15 ms both with and without the flood,
#: the slowest 25-81 ms during it (32-103 without). A request that waited for room in a full
#: backlog (the client waits up to 5 s), or behind the flood's half-sent requests (10 s each
#: until the daemon gives up on them), exceeds these by far.
FLOOD_MEDIAN_MS = 100
FLOOD_MAX_MS = 500


def root_requests(daemon, work: Path, name: str) -> dict | None:
    """20 requests of root's, each on a connection of its own as a command's is (switches and
    reads in turn), from one process: what root's commands wait for the daemon, without their
    processes' start. The bench's JSON, or None."""
    out = work / f"root.{name}.json"
    out.unlink(missing_ok=True)
    done = run([BIN / "linkcond-bench", "load", "--socket", daemon.socket, "--readers", 0, "--switchers", 1,
                "--requests", 20, "--connection-per-request", "--profile", "Slow Net", "--profile", "Nasty Net",
                "--out", out], timeout=300)
    result = read_json(out)
    print(f"root's requests ({name}): exit {done.rc}; {result and {k: result.get(k) for k in ('answersByStatus', 'failures', 'latency')}}"
          f"{'' if done.rc == 0 else ' ' + done.describe()}")
    return result


def timed_command(daemon, *args: str) -> float | None:
    """A whole `linkcond` command of root's, the client's start included: its seconds, or None
    when it failed."""
    result = daemon.cli(*args, timeout=60)
    if result.rc != 0:
        print(f"root: linkcond {' '.join(args)} failed: {result.describe()}")
        return None
    return result.seconds


def latency(result: dict | None, key: str) -> float | None:
    return ((result or {}).get("latency") or {}).get(key)


@pytest.mark.checks(10)
def test_flood_of_connections(check, baseline, work):
    """A user without rights holds every connection it may (64) and keeps opening more: root's
    commands and root's own requests are answered 200 all the same, and promptly; the rest of
    the user's connections are refused with 503; the daemon's descriptors stay within the
    user's limit, its memory bounded."""
    daemon = baseline
    calm_commands = [timed_command(daemon, "status"), timed_command(daemon, "activate", BASELINE)]
    calm = root_requests(daemon, work, "calm")
    rss_before, fds_before = daemon.rss_kib(), settled_fd_count(daemon)
    stop_file = work / "flood.stop"
    stop_file.unlink(missing_ok=True)
    out = writable_by_anyone(work / "flood.json")
    # At the lowest priority: what is measured is the daemon's share of connections, not how
    # the CPU is shared between the flooding process and root's clients starting.
    with (work / "flood.out").open("w") as log:
        flood = spawn(["nice", "-n", "19", *as_stranger([BIN / "linkcond-bench", "flood", "--socket", daemon.socket,
                                                         "--connections", 5000, "--seconds", 120,
                                                         "--until", stop_file, "--out", out])],
                      stdout=log, stderr=subprocess.STDOUT)
    try:
        held = wait_until(lambda: (daemon.fd_count() or 0) - fds_before >= CONNECTIONS_PER_USER, 30, 0.1)
        held_fds = daemon.fd_count()
        commands, rss_peak = [], rss_before
        for i in range(3):
            commands.append(timed_command(daemon, "status"))
            commands.append(timed_command(daemon, "activate", "Slow Net" if i % 2 else "Nasty Net"))
            rss_peak = max(rss_peak or 0, daemon.rss_kib() or 0)
        during = root_requests(daemon, work, "flood")
        fds_during = daemon.fd_count()
        flooding = flood.poll() is None
    finally:
        stop_file.touch()
        try:
            flood.wait(60)
        except subprocess.TimeoutExpired:
            stop(flood)
    result = read_json(out)
    print(f"flood: {(work / 'flood.out').read_text()[-600:]}")
    print(f"root's commands (s): without the flood {calm_commands}; during it {commands}")
    check.true("flood: the user holds its connections before root's commands", held is not None,
               f"{(held_fds or 0) - (fds_before or 0)} more descriptors in the daemon",
               f">= {CONNECTIONS_PER_USER} more (its limit)")
    check.equal("flood: on during every one of root's commands and requests", True, flooding)
    check.equal("flood: root's status and activate answered", 6, sum(c is not None for c in commands))
    check.equal("flood: root's 20 requests, each on a new connection, answered 200 (without, during)", (20, 20),
                (((calm or {}).get("answersByStatus") or {}).get("200"),
                 ((during or {}).get("answersByStatus") or {}).get("200")))
    calm_p50, calm_max = latency(calm, "p50Milliseconds"), latency(calm, "maxMilliseconds")
    check.at_most("flood: root's requests, median during the flood", latency(during, "p50Milliseconds"),
                  (calm_p50 or 0) + FLOOD_MEDIAN_MS, "ms",
                  why=f"{FLOOD_MEDIAN_MS} ms over the median without it, {calm_p50} ms")
    check.at_most("flood: root's requests, the slowest during the flood", latency(during, "maxMilliseconds"),
                  (calm_max or 0) + FLOOD_MAX_MS, "ms", why=f"{FLOOD_MAX_MS} ms over the slowest without it, {calm_max} ms")
    check.at_least("flood: the user's connections beyond its limit refused with 503",
                   (result or {}).get("refusedWith503"), 1, "connections")
    check.at_most("flood: descriptors the daemon holds beyond its own during the flood",
                  None if fds_during is None or fds_before is None else fds_during - fds_before,
                  CONNECTIONS_PER_USER + 8, "fds", why=f"the user's {CONNECTIONS_PER_USER} and a few in passing; "
                  f"{fds_before} -> {fds_during}")
    # Measured: 1076-1088 KiB for the user's 64 half-sent requests; room for one 2 MiB step of the
    # allocator (a transparent huge page) beside it. Memory kept per refused connection (hundreds
    # to thousands of them) or per request byte held would exceed it.
    check.at_most("flood: resident memory growth at its peak", growth(rss_before, rss_peak), 4096, "KiB",
                  why=f"{rss_before} -> {rss_peak} KiB")
    check.equal("flood: the daemon is still running", True, daemon.running)


# ---------------------------------------------------------------- load

LOAD_ROUNDS = 3


def load_round(daemon, work: Path, number: int) -> tuple[dict | None, dict | None]:
    """40 readers (a user without rights) and 10 switchers (a member) at once, 100 requests
    each: the two results, None for one that wrote none."""
    readers_out = writable_by_anyone(work / f"load.{number}.readers.json")
    switchers_out = writable_by_anyone(work / f"load.{number}.switchers.json")
    bench = [BIN / "linkcond-bench", "load", "--socket", daemon.socket, "--requests", 100]
    with (work / f"load.{number}.readers.out").open("w") as log:
        readers = spawn(as_stranger([*bench, "--readers", 40, "--switchers", 0, "--out", readers_out]),
                        stdout=log, stderr=subprocess.STDOUT)
    switchers = run(as_member([*bench, "--readers", 0, "--switchers", 10, "--profile", "Slow Net",
                               "--profile", "Nasty Net", "--profile", "Black Hole", "--out", switchers_out]),
                    timeout=900)
    try:
        readers.wait(900)
    except subprocess.TimeoutExpired:
        stop(readers)
    print(f"load round {number}: readers exit {readers.returncode}, switchers {switchers.describe()}")
    return read_json(readers_out), read_json(switchers_out)


def answers(results, status: str | None) -> int | None:
    """Answers with STATUS (None: any other than 200 and 409) over RESULTS; None if one is missing."""
    if any(r is None for r in results):
        return None
    total = 0
    for r in results:
        for key, count in (r.get("answersByStatus") or {}).items():
            if (status is not None and key == status) or (status is None and key not in ("200", "409")):
                total += count
    return total


@pytest.mark.checks(8)
def test_load_rounds(check, baseline, device, refs, work):
    """50 clients x 100 requests, three rounds: every answer 200 (409 is documented, but no one
    holds a lease), no client failed; no descriptor leaked, no thread not the daemon's own
    (a libdispatch worker would mean a task scheduled off its event loop), memory flat in
    rounds 2 and 3 (as with the hostile requests, the first round brings it to its working
    size: the smaller growth within 1 MiB, measured -96 to 308 KiB, catches a leak of 200 bytes
    a request); the last switch in force, whole."""
    daemon = baseline
    fds_before = settled_fd_count(daemon)
    results, rss = [], []
    for number in range(1, LOAD_ROUNDS + 1):
        results += load_round(daemon, work, number)
        settled_fd_count(daemon)
        rss.append(daemon.rss_kib())
    fds_after = settled_fd_count(daemon)
    check.equal("load: every round's results written", 2 * LOAD_ROUNDS, sum(r is not None for r in results))
    check.equal("load: answers 200", LOAD_ROUNDS * 50 * 100, answers(results, "200"))
    failed = None if None in results else sum(r.get("failures", 0) for r in results)
    check.equal("load: errors other than 409, and clients that failed", (0, 0), (answers(results, None), failed))
    check.equal("load: descriptors after the three rounds (none leaked)", fds_before, fds_after)
    check.equal("load: threads in linkcondd not its own", [], daemon.foreign_threads())
    check.at_most("load: resident memory, growth in rounds 2 and 3 (the smaller)",
                  smaller(growth(rss[0], rss[1]), growth(rss[1], rss[2])), 1024, "KiB",
                  why=f"{rss[0]} -> {rss[1]} -> {rss[2]} KiB; 5000 requests a round")
    in_force = daemon.api.profile_in_force()
    check.true("load: the last switch is one of the switchers' profiles", in_force in SWITCHED, in_force,
               " or ".join(SWITCHED))
    check_tree(check, f"load: the last switch ({in_force}) in force, whole tree", device, refs, in_force)
