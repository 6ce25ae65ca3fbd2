"""Leases and `linkcond run`: a condition that ends by itself, and one that lasts as long as a
command, then gives back what was in force before.

Leases: a timed lease reverts when its time is up, names its holder, refuses every change but
a forced one (the holder's own too), and only its holder may end it early. `linkcond run`: the
command's exit status whatever happens (a signal, a terminal's Ctrl-C, the daemon stopped or
killed), the command run as a shell would run it, and the previous condition back, whole, when
it ends.

Timed (alone on the CPU): the lease's revert against the moment it began, and how soon the
previous condition is back once `run`'s client is gone, both from the kernel's own
announcement of the change (tc monitor).

Every test starts from the baseline, Slow Net in force, and compares trees whole against the
ones each profile built at the module's start.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time

import pytest

from harness.clients import (QdiscMonitor, check_tree, children, parse_stat, proc_stat, read_json, reference_trees,
                             request_as, seconds_until_netem)
from harness.system import HARNESS, SYSTEM_PYTHON, run, wait_until

CHECKS = 70

BASELINE = "Slow Net"
LEASED = "Nasty Net"
OTHER = "Black Hole"

#: The timed lease: nothing but a tree read happens in it; long enough that a timer counting
#: from the wrong moment shows, short enough to keep the timed phase short.
LEASE_SECONDS = 4
#: How late the lease's revert may come, after the answer + its time. Measured under User-mode
#: Linux (tc monitor's moment of the change): 3.992-4.013 s after the answer of a 4 s lease,
#: 0.012-0.023 s after the request + 4 s; a timer 50 ms late fails.
LEASE_LATE = 0.05

#: How long the previous condition may take to come back once `run`'s client is gone (killed,
#: ended by a signal passed on, or by a terminal's Ctrl-C), from the signal to the kernel's
#: announcement of the change (tc monitor): the daemon learns it from the connection closing,
#: an event, not a timer. Measured under User-mode Linux beside other VMs on the host (load 3-5
#: on 2 CPUs): 0.010-0.031 s for a SIGKILL, 0.016-0.108 s for a signal passed on (the command's
#: end and the client's included), 0.025-0.047 s from Ctrl-C. A restore that waited for any of
#: the daemon's own timeouts (10 s for a request or an answer, 30 s idle), or for a sweep once a
#: second, fails. Tight: these tests run in the timed phase.
RESTORE_LIMIT = 0.5


@pytest.fixture(scope="module")
def refs(linkcondd, device):
    return reference_trees(linkcondd, device, (LEASED, OTHER, BASELINE))


@pytest.fixture
def baseline(daemon, refs):
    """The daemon with Slow Net in force: what a lease or `run` must give back."""
    daemon.api.must(daemon.api.activate(BASELINE))
    return daemon



def require_in_force(check, device, refs, profile, limit: float = 20) -> None:
    """PROFILE in force within LIMIT seconds (the uplink's netem reads its), or the test stops."""
    took = seconds_until_netem(device, refs[profile].netem, limit)
    check.true(f"{profile} in force", took is not None, f"after {took:.3f} s" if took is not None else f"not within {limit} s",
               "in force", require=True)


def wait_for_command(client: subprocess.Popen, name: str, limit: float = 20):
    """The process `run` started (NAME), once it runs as the client's child."""
    def started():
        return next((c for c in children(client.pid) if c.comm == name), None)
    return wait_until(started, limit, 0.02)


def ended(pid: int) -> bool:
    """PID has ended (a zombie no one reaped yet counts)."""
    stat = proc_stat(pid)
    return stat is None or stat.state == "Z"


def since(began: float | None, seen: float | None) -> float | None:
    """Seconds from BEGAN to SEEN (on one clock), or None when either is missing."""
    return None if began is None or seen is None else seen - began


def last_json_line(text: str):
    """The last line of TEXT that is JSON, or None."""
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def end_group(process: subprocess.Popen) -> None:
    """Ends PROCESS's process group (a client and the command it runs), if any of it is left."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass


# ---------------------------------------------------------------- leases

@pytest.mark.timed
@pytest.mark.checks(8)
def test_timed_lease_reverts_on_time(check, baseline, device, refs):
    """A 4 s lease of Nasty Net over Slow Net: its time left right after, Slow Net back when the
    time is up, whole, and history saying the lease expired. Asked through the API, so that its
    start is known within the request's few milliseconds, and the revert's moment taken from
    the kernel's own announcement of it (tc monitor): not before the request + 4 s, and at most
    LEASE_LATE after the answer + 4 s."""
    daemon = baseline
    with QdiscMonitor(device) as monitor:
        asked = time.time()
        reply = daemon.api.activate(LEASED, **{"for": f"{LEASE_SECONDS}s"})
        answered = time.time()
        check.equal(f"lease of {LEASE_SECONDS} s: the API answers", 200, reply.status, require=True)
        # secondsLeft counts whole seconds, rounded up.
        check.equal("lease: time left right after", LEASE_SECONDS, (reply.json.get("lease") or {}).get("secondsLeft"))
        check_tree(check, f"lease: {LEASED} in force, whole tree", device, refs, LEASED)
        reverted = monitor.when_netem(refs[BASELINE].netem, LEASE_SECONDS + 10)
    after = None if reverted is None else reverted - answered
    shown = f"{after:.4f} s after the answer" if after is not None else "not announced"
    check.at_least(f"lease: {BASELINE} back not before its time", since(asked + LEASE_SECONDS, reverted), 0, "s",
                   promised=f"{LEASE_SECONDS} s after the request", why=shown)
    check.at_most(f"lease: {BASELINE} back on time", since(answered + LEASE_SECONDS, reverted), LEASE_LATE, "s",
                  promised=f"{LEASE_SECONDS} s after the answer",
                  why=f"{shown}; the request took {answered - asked:.4f} s")
    check_tree(check, f"lease: whole tree back to {BASELINE}", device, refs, BASELINE)
    last = (daemon.api.history(5) or [{}])[-1]
    check.equal("history: the lease expired", ("lease-expired", LEASED, BASELINE),
                (last.get("reason"), last.get("from"), last.get("to")))
    status = daemon.api.status()
    check.equal(f"lease: status says {BASELINE}, no lease", (BASELINE, None),
                ((status.get("profile") or {}).get("name"), status.get("lease")))


@pytest.mark.checks(14)
def test_lease_held_refuses_changes(check, baseline, device, refs):
    """While root holds a lease (`activate --for 1h`): status says how long, who holds it and
    what comes back; root's own second change is refused saying the lease is its own, a
    member's is refused naming the holder (the CLI, and the API's 409 lease-held), nothing
    changes; the member may not end it, the holder may, and the baseline comes back whole."""
    daemon = baseline
    began = time.monotonic()
    check.exit_status(f"activate {LEASED} --for 1h", daemon.cli("activate", LEASED, "--for", "1h"), 0, require=True)
    lease = daemon.api.status().get("lease") or {}
    elapsed = time.monotonic() - began
    # Whole seconds, rounded up: 3600 unless the command and the read took a second or more.
    check.between("lease: time left right after", lease.get("secondsLeft"), math.ceil(3600 - elapsed), 3600, "s",
                  promised=f"3600 s less the {elapsed:.3f} s since the command started")
    check.contains("lease: status names the holder's command", (lease.get("holder") or {}).get("command"),
                   f"activate {LEASED} --for 1h")
    check.equal("lease: status says what comes back", BASELINE, lease.get("restores"))
    own = daemon.cli("activate", OTHER)
    check.exit_status("lease held: the holder's own second change refused", own, "nonzero")
    check.contains("lease held: the refusal says the lease is yours", own.err, f"you already hold '{LEASED}'")
    member = daemon.cli("activate", OTHER, user="member")
    check.exit_status("lease held: another group member refused", member, "nonzero")
    check.contains("lease held: the refusal names the holder", member.output, "held by uid 0")
    reply = request_as("member", daemon.socket, "PUT", "/v1/condition", {"profile": OTHER})
    check.equal("lease held: the API answers a member", "409 lease-held", f"{reply.status} {reply.error_code}")
    check_tree(check, f"lease held: still {LEASED}, whole tree", device, refs, LEASED)
    check.exit_status("release: someone else's lease is not a member's to end", daemon.cli("release", user="member"),
                      "nonzero")
    check.exit_status("release: the holder ends the lease early", daemon.cli("release"), 0)
    check_tree(check, f"release: whole tree back to {BASELINE}", device, refs, BASELINE)
    status = daemon.api.status()
    check.equal(f"release: status says {BASELINE}, no lease", (BASELINE, None),
                ((status.get("profile") or {}).get("name"), status.get("lease")))


@pytest.mark.checks(3)
def test_force_takes_over_a_lease(check, baseline, device, refs):
    """`--force` replaces a lease someone holds; the lease ends with it."""
    daemon = baseline
    daemon.api.must(daemon.api.activate(LEASED, **{"for": "1h"}))
    check.exit_status("lease: --force takes over", daemon.cli("activate", OTHER, "--force"), 0)
    check_tree(check, f"lease: --force puts {OTHER} in force, whole tree", device, refs, OTHER)
    status = daemon.api.status()
    check.equal("lease: --force ended the lease", (OTHER, None), (status["profile"]["name"], status.get("lease")))


# ---------------------------------------------------------------- linkcond run

@pytest.mark.checks(4)
@pytest.mark.parametrize("code", [0, 3])
def test_run_passes_exit_status(check, baseline, device, refs, topo, work, code):
    """The command's exit status is `run`'s; while it runs, the status and the kernel show the
    profile; when it ends, the baseline is back whole."""
    daemon = baseline
    inside, kernel = work / f"run.inside.{code}.json", work / f"run.kernel.{code}.txt"
    for path in (inside, kernel):
        path.unlink(missing_ok=True)
    client = " ".join(daemon.client_argv("status", "--json"))
    script = (f"{client} >{inside}; tc -n {topo.client.name} qdisc show dev {topo.interface} >{kernel}; "
              f"exit {code}")
    result = daemon.cli("run", "--profile", LEASED, "--", "sh", "-c", script, timeout=60)
    check.exit_status(f"run, command exits {code}: its status passed through", result, code)
    check.equal(f"run, command exits {code}: status while it runs", LEASED,
                ((read_json(inside) or {}).get("profile") or {}).get("name"))
    netem = next((line.strip() for line in (kernel.read_text() if kernel.exists() else "").splitlines()
                  if " netem 7a10: " in f" {line}"), None)
    check.equal(f"run, command exits {code}: the kernel while it runs", refs[LEASED].netem, netem)
    check_tree(check, f"run, command exits {code}: whole tree back to {BASELINE}", device, refs, BASELINE)


@pytest.mark.timed
@pytest.mark.checks(4)
def test_run_client_killed_restores(check, baseline, device, refs):
    """`run`'s client SIGKILLed: the daemon sees its connection close and gives back the
    baseline, whole, at once."""
    client = baseline.client_process("run", "--profile", OTHER, "--", "sleep", "120", start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        require_in_force(check, device, refs, OTHER)
        check_tree(check, f"run: {OTHER} while the command runs, whole tree", device, refs, OTHER)
        with QdiscMonitor(device) as monitor:
            killed = time.time()
            os.kill(client.pid, signal.SIGKILL)
            back = since(killed, monitor.when_netem(refs[BASELINE].netem, 20))
        check.at_most(f"run: client SIGKILLed, {BASELINE} back within", back, RESTORE_LIMIT, "s")
        check_tree(check, f"run: client SIGKILLed, whole tree back to {BASELINE}", device, refs, BASELINE)
    finally:
        end_group(client)


def _as_a_background_job():
    """What a non-interactive shell's background job starts with: SIGINT and SIGQUIT ignored
    (and SIGPIPE, as the client ignores it itself)."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)


@pytest.mark.checks(4)
def test_run_command_as_a_shell_runs_it(check, baseline, work):
    """The command starts with every signal at its default and none blocked (whatever the
    client inherited or does itself), in the client's process group and session, with no socket
    of the client's (its lease's connection) open."""
    fds, child = work / "run.fds", work / "run.child"
    for path in (fds, child):
        path.unlink(missing_ok=True)
    script = f"ls -l /proc/$$/fd >{fds}; exec cat /proc/self/status /proc/self/stat >{child}"
    client = baseline.client_process("run", "--profile", LEASED, "--", "sh", "-c", script, start_new_session=True,
                                     preexec_fn=_as_a_background_job, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
    try:
        client.wait(60)
    finally:
        end_group(client)
    text = child.read_text() if child.exists() else ""
    fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
    check.equal("run: the command ignores no signal", "0000000000000000", fields.get("SigIgn", "").strip() or None)
    check.equal("run: the command blocks no signal", "0000000000000000", fields.get("SigBlk", "").strip() or None)
    stat = parse_stat(text)
    # The client leads a session of its own here: its process group and session are its pid.
    check.equal("run: the command is in the client's process group and session",
                (client.pid, client.pid), (stat.pgrp, stat.session) if stat else None)
    listing = fds.read_text().splitlines() if fds.exists() else None
    descriptors = [line for line in listing or [] if "->" in line]
    sockets = [line.split("->")[1].strip() for line in descriptors if "socket:" in line]
    check.true("run: the command inherits no socket of the client's", listing is not None and not sockets,
               f"{len(sockets)} sockets {sockets} of {len(descriptors)} descriptors" if listing is not None else None,
               "0 sockets")


@pytest.mark.timed
@pytest.mark.checks(4)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_run_passes_signals_on(check, baseline, device, refs, sig):
    """A signal sent to the client (a CI runner's timeout) reaches the command, whose death by it
    is `run`'s exit status (128 + N); the baseline comes back."""
    client = baseline.client_process("run", "--profile", LEASED, "--", "sleep", "100", start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        command = wait_for_command(client, "sleep")
        in_force = seconds_until_netem(device, refs[LEASED].netem, 20)
        check.true(f"run: the command runs under {LEASED}", command is not None and in_force is not None,
                   f"command {'running' if command else 'not started'}, {LEASED} {'in force' if in_force is not None else 'not in force'}",
                   "both", require=True)
        with QdiscMonitor(device) as monitor:
            sent = time.time()
            os.kill(client.pid, sig)
            try:
                rc = client.wait(30)
                rc = 128 - rc if rc < 0 else rc
            except subprocess.TimeoutExpired:
                rc = None
            back = since(sent, monitor.when_netem(refs[BASELINE].netem, 20))
            if back is None:
                print(f"qdisc changes seen after {sig.name}:", *[f"  {m - sent:+.3f} s {t}" for m, t in monitor.events],
                      f"the daemon's status: {baseline.api.status()}", sep="\n")
        check.equal(f"run: {sig.name} to the client, its exit status", 128 + sig, rc)
        # The client dying of the signal would give the same status: the command must end too.
        gone = wait_until(lambda: ended(command.pid), 5) is not None
        check.true(f"run: {sig.name} to the client ends the command", gone, "ended" if gone else "still running",
                   "ended")
        check.at_most(f"run: after {sig.name}, {BASELINE} back within", back, RESTORE_LIMIT, "s")
    finally:
        end_group(client)


@pytest.mark.timed
@pytest.mark.checks(3)
def test_run_at_a_terminal(check, baseline, device, refs):
    """At a terminal: the command reads it (in the foreground group, no SIGTTIN), and Ctrl-C (the
    terminal's SIGINT, to the client and the command at once) ends it with 130; the baseline
    comes back."""
    with QdiscMonitor(device) as monitor:
        done = run([SYSTEM_PYTHON, HARNESS / "terminal.py", "--expect", "got:hello", "--answer", "hello\n",
                    "--", *baseline.client_argv("run", "--profile", LEASED, "--", "sh", "-c",
                                                'read line; echo "got:$line"; sleep 100')], timeout=90)
        report = last_json_line(done.out)
        back = since((report or {}).get("interrupted_at"), monitor.when_netem(refs[BASELINE].netem, 20))
    print(f"terminal: {done.out.strip()[-500:]} {done.err.strip()[-300:]}")
    check.equal("run at a terminal: the command reads it", True, (report or {}).get("expected_seen"))
    check.equal("run at a terminal: Ctrl-C ends the command, status 130", 130, (report or {}).get("status"))
    check.at_most(f"run at a terminal: {BASELINE} back after Ctrl-C within", back, RESTORE_LIMIT, "s")


@pytest.mark.checks(4)
def test_run_own_failures(check, baseline, device, refs, work):
    """linkcond's own failure is 125 and the command does not run; a command that cannot be
    started is 126, one not found 127; the baseline stays."""
    ran = work / "ran"
    ran.unlink(missing_ok=True)
    unknown = baseline.cli("run", "--profile", "No Such Profile", "--", "touch", ran)
    check.equal("run: linkcond's own failure is 125, the command does not run", "exit 125, not run",
                f"exit {unknown.rc}, {'ran' if ran.exists() else 'not run'}")
    not_executable = work / "not-executable"
    not_executable.write_text("#!/bin/sh\nexit 0\n")
    not_executable.chmod(0o644)
    check.exit_status("run: a command that cannot be started is 126",
                      baseline.cli("run", "--profile", LEASED, "--", not_executable), 126)
    check.exit_status("run: a command not found is 127",
                      baseline.cli("run", "--profile", LEASED, "--", "no-such-command-anywhere"), 127)
    check_tree(check, f"run: {BASELINE} in force after the failures, whole tree", device, refs, BASELINE)


@pytest.mark.checks(6)
def test_run_daemon_stopped_mid_command(check, baseline, device, refs, work):
    """The daemon stops while the command runs: the client says so and still returns the
    command's own status; the stop removed everything, and history records the shutdown ending
    the lease."""
    daemon = baseline
    err = work / "run.stop.err"
    with err.open("w") as stderr:
        client = daemon.client_process("run", "--profile", LEASED, "--", "sh", "-c", "sleep 3; exit 7",
                                       start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        require_in_force(check, device, refs, LEASED)
        daemon.stop(signal.SIGTERM)
        rc = client.wait(60)
    finally:
        end_group(client)
    check.equal("run: daemon stopped mid-command, the command's status kept", 7, rc)
    check.contains("run: daemon stopped mid-command, the client says so", err.read_text(), "linkcondd stopped")
    check_tree(check, "run: after the stop, nothing shaped", device, refs, "off")
    daemon.start()
    check_tree(check, "run: a stop is final, the restarted daemon leaves it off", device, refs, "off")
    check.contains("history: the shutdown ended the lease", daemon.cli("history", "-n", "3").out,
                   f"shutdown, ended the lease on '{LEASED}'")


@pytest.mark.checks(4)
def test_run_daemon_killed_mid_command(check, baseline, device, refs, work):
    """The daemon is SIGKILLed while the command runs: the client says it lost the connection
    and returns the command's status; the restarted daemon brings back the baseline, whole."""
    daemon = baseline
    err = work / "run.kill.err"
    with err.open("w") as stderr:
        client = daemon.client_process("run", "--profile", LEASED, "--", "sh", "-c", "sleep 3; exit 7",
                                       start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        require_in_force(check, device, refs, LEASED)
        daemon.kill()
        rc = client.wait(60)
    finally:
        end_group(client)
    check.equal("run: daemon killed mid-command, the command's status kept", 7, rc)
    check.contains("run: daemon killed mid-command, the client says so", err.read_text(),
                   "lost the connection to linkcondd")
    daemon.start()
    check_tree(check, f"run: the restarted daemon restores {BASELINE}, whole tree", device, refs, BASELINE)
