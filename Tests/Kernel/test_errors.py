"""Errors a user meets, each saying what is wrong and changing nothing.

* A kernel without sch_netem: activation fails naming the module, the interface stays exactly
  as it was, the status says off. The test unloads netem and turns the kernel's module
  autoloading off itself, and puts both back whatever happens.
* The client without a daemon, an unknown profile (with a suggestion), LINKCOND_SOCKET; the
  daemon without CAP_NET_ADMIN, on a missing interface, with a missing profile directory, with
  no profile at all; `linkcond doctor` on netem, a daemon that answers, and sockets that are not
  what they seem.

Functional: nothing here is timed.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness import contract
from harness.daemon import environment
from harness.system import BIN, as_stranger, run
from harness.tc import snapshot

CHECKS = 32

MODPROBE = Path("/proc/sys/kernel/modprobe")
NETEM = Path("/sys/module/sch_netem")


def status_of(daemon) -> tuple[bool, str | None]:
    """(active, profile name) as the daemon's status says."""
    document = daemon.api.status()
    return document.get("active"), (document.get("profile") or {}).get("name")


# ---------------------------------------------------------------- no netem

@pytest.fixture
def without_netem():
    """sch_netem unloaded and the kernel unable to load it (its module loader /bin/false);
    both put back at the end, whatever happened."""
    helper = MODPROBE.read_text().strip()
    try:
        unloaded = run(["modprobe", "-r", "sch_netem"])
        if unloaded.rc != 0:
            pytest.fail(f"could not unload sch_netem: {unloaded.describe()}")
        MODPROBE.write_text("/bin/false\n")
        yield
    finally:
        MODPROBE.write_text(helper + "\n")
        run(["modprobe", "sch_netem"]).ok()


@pytest.mark.checks(5)
def test_no_netem_activation_fails_and_changes_nothing(check, daemon, device, without_netem):
    """With no sch_netem to be had: activate fails naming sch_netem, the interface is exactly as
    before, the status says off."""
    check.true("sch_netem unloaded, the kernel's module loader off", not NETEM.exists()
               and MODPROBE.read_text().strip() == "/bin/false",
               f"{'loaded' if NETEM.exists() else 'absent'}, modprobe={MODPROBE.read_text().strip()}",
               "absent, modprobe=/bin/false", require=True)
    before = snapshot(device)
    failed = daemon.cli("activate", "Slow Net")
    check.exit_status("no netem: activate fails", failed, "nonzero")
    check.contains("no netem: the message names sch_netem", failed.err, "sch_netem")
    after = snapshot(device)
    if after != before:
        print(f"the interface before:\n{before}\nand after:\n{after}")
    check.true("no netem: rolled back, the interface as before", after == before,
               "identical" if after == before else "differs (both printed above)", "identical")
    check.equal("no netem: status", (False, None), status_of(daemon))


# ---------------------------------------------------------------- the client

@pytest.mark.checks(2)
def test_no_daemon(check, work):
    """The client with no daemon behind its socket fails, naming the socket."""
    absent = work / "absent.sock"
    done = run([BIN / "linkcond", "--socket", absent, "status"], timeout=30)
    check.exit_status("no daemon: the client fails", done, "nonzero")
    check.contains("no daemon: names the socket", done.output, str(absent))


@pytest.mark.checks(2)
def test_unknown_profile_suggests(check, daemon):
    """A misspelt profile: refused, with the profile meant suggested."""
    done = daemon.cli("activate", "slow nte")
    check.exit_status("unknown profile: fails", done, "nonzero")
    check.contains("unknown profile: suggests the one meant", done.err, "did you mean 'Slow Net'")


@pytest.mark.checks(2)
def test_linkcond_socket_selects_the_socket(check, daemon, topo):
    """LINKCOND_SOCKET, without --socket, is the socket the client asks."""
    done = run([BIN / "linkcond", "status"], timeout=30, env=environment(LINKCOND_SOCKET=str(daemon.socket)))
    check.exit_status("LINKCOND_SOCKET: status succeeds", done, 0)
    check.contains("LINKCOND_SOCKET: the status is this daemon's", done.out, f"{topo.interface}: off")


# ---------------------------------------------------------------- the daemon

def daemon_refuses(topo, work: Path, name: str, *args: str, user: str = "root"):
    """linkcondd started with ARGS (socket, state and history of its own under WORK/NAME), which
    must exit by itself: its result (124 when it ran on)."""
    place = work / name
    place.mkdir(mode=0o1777, exist_ok=True)
    place.chmod(0o1777)
    argv = [BIN / "linkcondd", "--socket", place / "linkcond.sock", "--state-dir", place / "state",
            "--history-file", place / "history.jsonl", *args]
    if user == "stranger":
        argv = as_stranger(argv)
    return topo.client.run(*argv, timeout=30)


@pytest.mark.checks(2)
def test_unprivileged_daemon_names_cap_net_admin(check, topo, work, profiles):
    done = daemon_refuses(topo, work, "unprivileged", "--interface", topo.interface, "--profiles", str(profiles),
                          user="stranger")
    check.exit_status("unprivileged daemon: fails", done, "nonzero")
    check.contains("unprivileged daemon: names CAP_NET_ADMIN", done.output, "CAP_NET_ADMIN")


@pytest.mark.checks(2)
def test_missing_interface(check, topo, work, profiles):
    done = daemon_refuses(topo, work, "nosuch", "--interface", "nosuch", "--profiles", str(profiles))
    check.exit_status("missing interface: the daemon fails", done, "nonzero")
    check.contains("missing interface: says it does not exist", done.output, "interface nosuch does not exist")


@pytest.mark.checks(2)
def test_profiles_naming_a_missing_directory(check, topo, work):
    missing = work / "no-such-profiles"
    done = daemon_refuses(topo, work, "typo", "--interface", topo.interface, "--profiles", str(missing))
    check.exit_status("--profiles naming a missing directory: the daemon fails", done, "nonzero")
    check.contains("--profiles naming a missing directory: says so", done.output, f"{missing} (--profiles) does not exist")


@pytest.mark.checks(2)
def test_no_profile_at_all(check, topo, work):
    empty = work / "empty-profiles"
    empty.mkdir(exist_ok=True)
    done = daemon_refuses(topo, work, "empty", "--interface", topo.interface, "--profiles", str(empty),
                          "--no-builtin-profiles")
    check.exit_status("no profile at all: the daemon fails", done, "nonzero")
    check.contains("no profile at all: says so", done.output, f"no profiles in {empty}")


# ---------------------------------------------------------------- doctor

def doctor_says(socket_path: Path, topic: str) -> str | None:
    """doctor's finding on TOPIC as `level: message`, None when it said nothing on it (or
    nothing readable)."""
    done = run([BIN / "linkcond", "--socket", socket_path, "doctor", "--json"], timeout=30)
    try:
        findings = json.loads(done.out)
    except ValueError:
        print(f"doctor printed no JSON: {done.describe()}")
        return None
    said = [f"{f['level']}: {f['message']}" for f in findings if f.get("topic") == topic]
    return said[0] if said else None


@pytest.mark.checks(6)
def test_doctor(check, daemon, work):
    """doctor's answers: netem loaded, the daemon answering, and a regular file, a directory, a
    socket nobody listens on and nothing where the socket should be."""
    run(["modprobe", "sch_netem"]).ok()
    check.contains("doctor: this kernel's sch_netem", doctor_says(daemon.socket, "kernel sch_netem"), "ok: loaded")
    check.contains("doctor: the daemon answers", doctor_says(daemon.socket, "daemon"),
                   f"ok: linkcondd answers on {daemon.socket}")

    regular = work / "regular.sock"
    regular.write_text("")
    check.contains("doctor: a regular file where the socket should be", doctor_says(regular, "daemon"),
                   f"fail: {regular} is a regular file, not a socket")

    directory = work / "directory.sock"
    directory.mkdir(exist_ok=True)
    check.contains("doctor: a directory where the socket should be", doctor_says(directory, "daemon"),
                   f"fail: {directory} is a directory")

    stale = work / "stale.sock"
    stale.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(stale))
    check.contains("doctor: a socket nobody listens on", doctor_says(stale, "daemon"),
                   f"fail: a stale socket: nothing answers on {stale}")

    absent = work / "absent.sock"
    absent.unlink(missing_ok=True)
    check.contains("doctor: no socket at all", doctor_says(absent, "daemon"), f"fail: no control socket at {absent}")


# ---------------------------------------------------------------- a kernel that cannot reset

@pytest.mark.checks(7)
def test_reset_without_socket_destroy(check, daemon):
    """User-mode Linux's kernel has no CONFIG_INET_DIAG_DESTROY: a reset is refused with
    reset-unavailable (a 501, as docs/openapi.yaml describes it), saying why, even with nothing to
    reset; nothing is recorded."""
    config = run(["sh", "-c", "zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r)"]).out
    check.true("this kernel cannot destroy sockets", "CONFIG_INET_DIAG_DESTROY=y" not in config,
               "CONFIG_INET_DIAG_DESTROY=y" if "CONFIG_INET_DIAG_DESTROY=y" in config else "not set", "not set",
               require=True)
    resets = lambda: [e for e in daemon.api.history() if e.get("reason") == "reset"]
    refused = daemon.cli("reset")
    check.exit_status("reset: refused", refused, "nonzero")
    check.contains("reset: the message names the kernel option", refused.err, "CONFIG_INET_DIAG_DESTROY")
    reply = daemon.api.request("POST", "/v1/condition/reset")
    check.equal("reset over HTTP: status and code", (501, "reset-unavailable"), (reply.status, reply.error_code))
    check.equal("reset over HTTP: the body as docs/openapi.yaml describes an Error", [],
                contract.Validator(contract.load_spec()).errors("Error", reply.json))
    stranger = daemon.cli("reset", "--to", "192.0.2.7", user="stranger")
    check.contains("reset by a user outside the group: refused as forbidden, before the kernel is asked",
                   stranger.err, "needs root or membership in the group 'linkcond'")
    check.equal("reset: nothing recorded", [], resets())
