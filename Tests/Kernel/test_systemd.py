"""linkcond under a real systemd: the units as `make install` writes them (pointing at the binaries
under test), activated by the socket, stopped and killed for real, logging to the journal, and
`run --isolated` under the unit's restrictions.

The daemon shapes lcsd0, one end of a veth pair in the systemd container's own namespace. Each
test starts with the service and the socket stopped and the interface as it was made.

The module runs under User-mode Linux; the `run --isolated` tests on Debian's kernel under qemu
(`debian_kernel`: a sandbox's NAT needs nftables' ip family, which User-mode Linux lacks).

Timed: the sandbox's delays, one way per direction (40 ms up, 60 ms down: a direction doubled,
swapped or missing is off by 20 ms or more), and a TCP connection's round trip through it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from harness.checks import minus
from harness.packet_traces import read_trace
from harness.probes import ProbeServer
from harness.system import BIN, HARNESS, REPO, SYSTEM_PYTHON, HarnessError, as_member, as_stranger, run, spawn, stop, wait_until
from harness.systemd import (CONTROL_SOCKET, RUNTIME_UNITS, SERVICE, SOCKET, HostNamespace, Journal, TestUnits, answers,
                             linkcond, profile_now, prop, systemctl, veth, wait_state)
from harness.tc import qdiscs, same_as, snapshot, tree_text

VM = "systemd"
CHECKS = 51

INTERFACE, PEER = "lcsd0", "lcsd1"
#: What the service reads or writes for the tests: outside /tmp, which PrivateTmp= hides from it.
FILES = Path("/run/linkcond-test")
#: The host a sandbox reaches, on the peer of the shaped veth: a DNS server answering every name
#: with ANSWER, a TCP port that accepts, the probe server.
HOST, ANSWER, CONNECT_PORT = "192.0.2.1", "192.0.2.77", 8080
NAME = "api.lc.test"
SANDBOX_PROFILE = "LC Sandbox Test"
#: The same sandbox unshaped: the baseline its delays are measured against.
UNSHAPED_PROFILE = "LC Sandbox Unshaped"
UP_MS, DOWN_MS = 40, 60
UNIT_PROFILES = {
    # A broken profile: a warning in the journal at every start.
    "broken.yaml": "name: Broken Test\ndownlink: { delay: soon }\n",
    "lc-sandbox-test.yaml": f"name: {SANDBOX_PROFILE}\nuplink: {{ delay: {UP_MS}ms }}\ndownlink: {{ delay: {DOWN_MS}ms }}\n",
    "lc-sandbox-unshaped.yaml": f"name: {UNSHAPED_PROFILE}\n",
}


#: Under qemu's emulation netem's delay fires late by a spread of its own. Measured through the
#: sandbox against the same sandbox unshaped (80 datagrams each way, 40 handshakes): the 10th
#: percentile of the one-way delays 0.05 to 0.6 ms over the profile's (four runs), the fastest
#: handshake 0.6 to 0.73 ms over 100 ms (three runs). So ±2 ms for each: it holds with 1.3 ms to spare, and a
#: delay 5 ms off fails, let alone a direction doubled, swapped or missing (20 ms or more).
ONEWAY_TOLERANCE = 2.0
ROUND_TRIP_TOLERANCE = 2.0
CONNECTIONS = 40


@pytest.fixture(scope="module")
def units():
    """The units installed for the module, the veth pair made, the modules loaded (the container
    may not load them itself: the kernel loads them on first use otherwise)."""
    run(["modprobe", "-a", "sch_netem", "sch_htb", "ifb", "act_mirred", "cls_u32", "cls_flower", "veth"])
    veth(INTERFACE, PEER)
    installed = TestUnits(INTERFACE, FILES).install(UNIT_PROFILES)
    yield installed
    installed.uninstall()
    run(["ip", "link", "del", INTERFACE])
    run(["rm", "-rf", str(FILES)])


@pytest.fixture(scope="module")
def pristine(units) -> str:
    """The interface as made, before any daemon touched it."""
    return snapshot(units.device)


@pytest.fixture
def stopped(units, pristine) -> TestUnits:
    """Service and socket stopped, the interface as made (linkcondd --cleanup, the units' own
    remedy, when a test before left it otherwise)."""
    units.stop()
    if snapshot(units.device) != pristine:
        run([BIN / "linkcondd", "--cleanup", "--interface", INTERFACE], timeout=120)
        if snapshot(units.device) != pristine:
            raise HarnessError("the interface is not as made, even after linkcondd --cleanup")
    return units


def started(units: TestUnits) -> None:
    """The socket listening, and the service started by a connection to it."""
    systemctl("start", SOCKET).ok()
    if answers() is None or not wait_state("active", SERVICE, 60):
        raise HarnessError(f"the service did not start on a connection: {prop('ActiveState')}")


def shaped_with(profile: str) -> None:
    done = linkcond("activate", profile)
    if done.rc != 0:
        raise HarnessError(f"activate {profile}: {done.describe()}")


def in_force(check, name: str, now: str, pristine: str) -> bool:
    """A positive control before a "nothing left": the tree made a difference to remove."""
    return check.true(name, now != pristine, "differs" if now != pristine else "identical",
                      "differs from the interface as made")


# ---------------------------------------------------------------- activation

@pytest.mark.checks(5)
def test_socket_activation(check, stopped):
    """Only the socket is started; a connection starts the service, which turns active once
    linkcondd sent READY=1 with its status text, serving systemd's own listening socket."""
    check.exit_status("systemctl start linkcondd.socket", systemctl("start", SOCKET), 0)
    check.equal("before any connection: socket listening, service not started", "listening inactive",
                f"{prop('SubState', SOCKET)} {prop('ActiveState')}")
    status = answers()
    wait_state("active", SERVICE, 60)
    check.equal("a connection to the socket starts the service and gets an answer", INTERFACE,
                (status or {}).get("interface", "no answer"))
    check.equal("Type=notify: active, with the status text sent with READY=1", f"active, 'shaping {INTERFACE}'",
                f"{prop('ActiveState')}, '{prop('StatusText')}'")
    main = prop("MainPID")
    listing = run(["ss", "-xlpn"]).ok().out.splitlines()
    holders = [line for line in listing if line.split()[4:5] == [str(CONTROL_SOCKET)]]
    held = len(holders) == 1 and "pid=1," in holders[0] and f"pid={main},fd=3)" in holders[0]
    check.true("the daemon serves systemd's own listening socket", held,
               " ".join(re.findall(r"pid=\d+,fd=\d+", " ".join(holders))) or "no listener",
               f"one socket, held by pid 1 and the daemon (pid {main}) as its fd 3")


@pytest.mark.checks(4)
def test_shaping_and_access_under_the_unit(check, stopped):
    """Through the socket unit, root shapes the interface; a user outside group linkcond reads
    the status and is refused a change, the message naming the group."""
    systemctl("start", SOCKET).ok()
    check.exit_status("activate Slow Net through the socket unit", linkcond("activate", "Slow Net"), 0)
    root = next((q for q in qdiscs(stopped.device, stats=False) if q.get("root")), None)
    check.equal("shaped under systemd: tc reads linkcond's htb root", "htb 7a00:",
                f"{root.get('kind')} {root.get('handle')}" if root else "no root qdisc")
    status = linkcond("status", "--json", argv_prefix=as_stranger([]))
    try:
        name = json.loads(status.out)["profile"]["name"]
    except (ValueError, KeyError, TypeError):
        name = "unreadable answer"
    check.equal("status as uid 65534 (not in group linkcond)", "exit 0, Slow Net", f"exit {status.rc}, {name}")
    refused = linkcond("activate", "Nasty Net", argv_prefix=as_stranger([]))
    now = profile_now()
    check.true("a change as uid 65534 is refused, naming group linkcond; Slow Net stays",
               refused.rc not in (0, 124) and "group 'linkcond'" in refused.output and now == "Slow Net",
               f"exit {refused.rc}, {refused.err.strip()[:100]!r}, {now}", "exit != 0 naming group 'linkcond', Slow Net")


@pytest.mark.checks(2)
def test_capture_under_the_unit(check, stopped):
    """`linkcond capture` through the units: the service's sandbox lets the daemon open its
    packet socket (AF_PACKET among its address families, CAP_NET_RAW among its capabilities),
    and the trace holds the pings sent out of the interface."""
    started(stopped)
    trace_file = Path("/tmp/lc-unit-capture.pcapng")
    trace_file.unlink(missing_ok=True)
    capture = spawn([str(BIN / "linkcond"), "capture", "-w", str(trace_file), "--for", "6s"], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: trace_file.exists() and trace_file.stat().st_size > 0 or capture.poll() is not None, 30)
        run(["ping", "-6", "-c", "3", "-i", "0.2", f"ff02::1%{INTERFACE}"], timeout=30)
        _, said = capture.communicate(timeout=60)
    finally:
        stop(capture)
    check.equal("capture through the unit: exit 0, nothing said", (0, ""), (capture.returncode, said.strip()))
    requests = len(read_trace(trace_file).echoes("IPv6", "request", "out")) if trace_file.exists() else 0
    check.true("the trace holds the 3 pings sent out of the interface", requests == 3, requests, 3)


@pytest.mark.checks(6)
def test_profiles_saved_under_the_unit(check, stopped):
    """`linkcond profile save` and `delete` through the units as shipped, the daemon searching its
    default directories (/etc/linkcond/profiles, then the built-ins): a member of group linkcond
    saves a profile, which the unit lets the daemon write (ReadWritePaths=) to
    /etc/linkcond/profiles as the file it sent; it is listed as writable beside the read-only
    built-ins and can be put in force; a user outside the group is refused and nothing changes;
    a built-in cannot be replaced; deleting removes the file."""
    directory = Path("/etc/linkcond/profiles")
    made = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    saved = directory / "lab-phone.yaml"
    text = "name: Lab Phone\ndescription: The lab's phone on 3G.\ndownlink: { bandwidth: 780kbit, delay: 150ms }\n"
    source = Path("/tmp/lc-lab-phone.yaml")
    source.write_text(text)
    copy = Path("/tmp/lc-slow-net-copy.yaml")
    copy.write_text("name: Slow Net\ndownlink: { delay: 1ms }\n")
    # Later than test.conf: the daemon's own default directories, as installed.
    stopped.dropin("zz-default-profiles.conf", f'[Service]\nEnvironment="LINKCONDD_OPTIONS=--interface {INTERFACE}"\n')
    stopped.reload()
    try:
        started(stopped)
        done = linkcond("profile", "save", str(source), argv_prefix=as_member([]))
        check.equal("saved by a member of group linkcond: exit 0, the file holds what was sent",
                    (0, text), (done.rc, saved.read_text() if saved.exists() else f"no {saved} ({done.describe()})"))
        listing = linkcond("list", "--json")
        try:
            read_only = {p["name"]: p.get("readOnly", False) for p in json.loads(listing.out)["profiles"]}
        except (ValueError, KeyError, TypeError):
            read_only = {"unreadable": listing.describe()}
        check.equal("listed: the saved one writable, a built-in read-only",
                    {"Lab Phone": False, "Slow Net": True}, {k: v for k, v in read_only.items() if k in ("Lab Phone", "Slow Net", "unreadable")})
        shaped_with("Lab Phone")
        check.equal("the saved profile put in force", "Lab Phone", profile_now())
        refused = linkcond("profile", "delete", "Lab Phone", argv_prefix=as_stranger([]))
        check.true("delete as uid 65534 (not in group linkcond) refused, naming the group; the file stays",
                   refused.rc not in (0, 124) and "group 'linkcond'" in refused.output and saved.exists(),
                   f"exit {refused.rc}, {refused.err.strip()[:100]!r}, file {'kept' if saved.exists() else 'gone'}",
                   "exit != 0 naming group 'linkcond', file kept")
        replaced = linkcond("profile", "save", "--replace", str(copy))
        check.true("a built-in is read-only, even with --replace", replaced.rc not in (0, 124) and "read-only" in replaced.output,
                   f"exit {replaced.rc}, {replaced.err.strip()[:160]!r}", "exit != 0 saying read-only")
        deleted = linkcond("profile", "delete", "lab-phone")
        check.equal("deleted by root: exit 0, the file gone", (0, False), (deleted.rc, saved.exists()))
    finally:
        linkcond("off")
        stopped.remove_dropin("zz-default-profiles.conf")
        stopped.reload()
        saved.unlink(missing_ok=True)
        source.unlink(missing_ok=True)
        copy.unlink(missing_ok=True)
        if made:
            run(["rm", "-rf", "/etc/linkcond"])


@pytest.mark.checks(5)
def test_console_under_its_unit(check, stopped):
    """linkcond-console.service as `make install` writes it: it runs as its own user in group
    linkcond (systemd-sysusers made it), serves the page on 127.0.0.1:8053, hands root a token
    on its token socket, and an operator signed in with it switches the daemon's condition
    through it: the daemon takes the console's user as one who may change conditions."""
    import http.client
    unit = RUNTIME_UNITS / "linkcond-console.service"
    unit.write_text((REPO / "systemd" / "linkcond-console.service.in").read_text().replace("@BINDIR@", str(BIN)))
    systemctl("daemon-reload").ok()

    def request(method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", 8053, timeout=30)
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers={"Content-Type": "application/json", "Host": "127.0.0.1:8053", **(headers or {})})
        answer = connection.getresponse()
        raw = answer.read()
        connection.close()
        try:
            return answer.status, json.loads(raw), dict(answer.getheaders())
        except ValueError:
            return answer.status, {"raw": raw[:80].decode(errors="replace")}, dict(answer.getheaders())

    try:
        started(stopped)
        systemctl("start", "linkcond-console.service").ok()
        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", 8053), timeout=2).close()
                return True
            except OSError:
                return False
        serving = wait_until(listening, 60)
        page = request("GET", "/") if serving else (0, {}, {})
        check.equal("the unit serves the page on 127.0.0.1:8053", 200, page[0])
        user = prop("User", "linkcond-console.service")
        main_pid = prop("MainPID", "linkcond-console.service")
        owner = run(["ps", "-o", "user:32=,group:32=", "-p", main_pid]).out.split()
        check.equal("it runs as linkcond-console in group linkcond", ["linkcond-console", "linkcond"], owner or [user])
        token = linkcond("console", "token", "--token-socket", "/run/linkcond-console/token.sock", "--for", "5m")
        check.true("root gets a token on its token socket", token.rc == 0 and token.out.strip().startswith("lct_"),
                   token.describe(), "exit 0, lct_...")
        status, session, headers = request("POST", "/api/sign-in", {"token": token.out.strip()})
        cookie = headers.get("Set-Cookie", "").split(";", 1)[0]
        changed = request("PUT", "/api/conditions/" + INTERFACE, {"profile": "Slow Net"},
                          {"Cookie": cookie, "X-CSRF-Token": session.get("csrf", "")})
        check.equal("an operator signed in through it puts Slow Net in force (200)", (200, 200), (status, changed[0]))
        check.equal("the daemon has it", "Slow Net", profile_now())
    finally:
        systemctl("stop", "linkcond-console.service", timeout=60)
        unit.unlink(missing_ok=True)
        systemctl("daemon-reload")
        linkcond("off")


# ---------------------------------------------------------------- stopping

@pytest.mark.checks(4)
def test_stop_removes_shaping(check, stopped, pristine):
    """`systemctl stop linkcondd.service` removes the shaping; the socket keeps listening."""
    started(stopped)
    shaped_with("Slow Net")
    in_force(check, "Slow Net in force before the stop", snapshot(stopped.device), pristine)
    check.exit_status("systemctl stop linkcondd.service", systemctl("stop", SERVICE, timeout=180), 0)
    same_as(check, "stop removes all shaping", pristine, snapshot(stopped.device))
    check.equal("after stop: service inactive, socket still listening", "inactive listening",
                f"{prop('ActiveState')} {prop('SubState', SOCKET)}")


@pytest.mark.checks(3)
def test_stop_of_both_units_removes_shaping(check, stopped, pristine):
    """`systemctl stop linkcondd.service linkcondd.socket` with a condition in force leaves the
    interface as made."""
    started(stopped)
    shaped_with("Slow Net")
    in_force(check, "Slow Net in force before the stop", snapshot(stopped.device), pristine)
    check.exit_status("systemctl stop linkcondd.service linkcondd.socket",
                      systemctl("stop", SERVICE, SOCKET, timeout=180), 0)
    same_as(check, "stopping both removes all shaping", pristine, snapshot(stopped.device))


@pytest.mark.checks(8)
def test_sigkill_cleanup_restart_and_restore(check, stopped, pristine):
    """A daemon killed with SIGKILL: ExecStopPost (linkcondd --cleanup) removes what it left,
    saying so in the journal before the restart; Restart=on-failure brings it back, and it
    restores the condition from its state file, the same tree as before."""
    units = stopped
    systemctl("start", SOCKET).ok()
    status = answers()
    wait_state("active", SERVICE, 60)
    check.equal("a connection to the socket starts the service", "active", prop("ActiveState") if status else "no answer")
    check.exit_status("activate Nasty Net", linkcond("activate", "Nasty Net"), 0)
    before_kill = tree_text(units.device)
    units.clear_stop_record()
    killed, restarts = prop("MainPID"), int(prop("NRestarts"))
    journal = Journal()
    if not killed.isdigit() or int(killed) <= 1:
        raise HarnessError(f"no main process to kill (MainPID {killed!r})")
    os.kill(int(killed), signal.SIGKILL)

    def restarted() -> bool:
        return (prop("MainPID") not in ("0", killed) and int(prop("NRestarts")) == restarts + 1
                and prop("ActiveState") == "active")

    back = wait_until(restarted, 180, 0.5)
    new_main = prop("MainPID")
    check.equal("SIGKILL: ExecStopPost ran for the killed daemon", "signal killed KILL", units.stop_result())
    same_as(check, "SIGKILL: after ExecStopPost (linkcondd --cleanup) the interface is as made", pristine,
            units.stop_snapshot() or "no snapshot taken")
    entries = journal.entries()
    ready_at = next((e.monotonic for e in entries if e.pid == new_main and e.message.startswith("ready:")), None)
    cleaned = [e for e in entries if e.message == f"cleanup: removed linkcond's tree from {INTERFACE}"
               and e.pid not in (killed, new_main) and ready_at is not None and e.monotonic < ready_at]
    check.equal("SIGKILL: linkcondd --cleanup logged the removal, a notice, before the restarted daemon was ready",
                "priority 5", f"priority {cleaned[0].priority}" if cleaned else
                f"no such line (restarted daemon ready: {'seen' if ready_at else 'not seen'})")
    check.true("SIGKILL: Restart=on-failure restarts the daemon", bool(back),
               f"NRestarts {restarts} -> {prop('NRestarts')}, MainPID {killed} -> {new_main}, {prop('ActiveState')}",
               "NRestarts +1, a new MainPID, active")
    check.equal("SIGKILL: the restarted daemon restores the condition", "Nasty Net", profile_now())
    restored = tree_text(units.device)
    check.true("SIGKILL: the restored tree is the one before the kill", restored == before_kill
               and any(" netem " in line for line in restored),
               "identical" if restored == before_kill else f"differs: {sorted(set(restored) ^ set(before_kill))[:4]}",
               "identical, with its netems")


# ---------------------------------------------------------------- the journal

@pytest.mark.checks(3)
def test_journal_priorities(check, stopped):
    """linkcondd starts each stderr line with its priority (<5>) under systemd; journald takes it
    as the line's priority and strips it: "ready:" is a notice, a broken profile a warning."""
    journal = Journal()
    systemctl("start", SOCKET).ok()
    for _ in range(2):
        if answers() is None or not wait_state("active", SERVICE, 60):
            raise HarnessError("the service did not start on a connection")
        systemctl("stop", SERVICE, timeout=180).ok()
    entries = journal.entries()
    starts = [e for e in entries if e.pid == "1" and e.message.startswith(f"Started {SERVICE}")]
    ready = [e.priority for e in entries if e.message.startswith(f"ready: shaping {INTERFACE}")]
    check.equal("each start's 'ready:' line has priority notice (5)", "2 starts, priorities 5 5",
                f"{len(starts)} starts, priorities {' '.join(ready) or 'none'}")
    warnings = [e.priority for e in entries if re.search(r"skipping profile: .*broken\.yaml", e.message)]
    check.equal("the broken profile's line has priority warning (4), once per start", "4 4",
                " ".join(warnings) or "no line")
    daemon_lines = [e for e in entries if e.pid != "1"]
    prefixed = [e.message for e in daemon_lines if re.match(r"<[0-7]>", e.message)]
    check.true("no line keeps its '<N>' prefix", bool(daemon_lines) and not prefixed,
               f"{len(prefixed)} of {len(daemon_lines)} lines" + (f" ({prefixed[0][:60]!r})" if prefixed else ""),
               "none of the daemon's lines (some read)")


# ---------------------------------------------------------------- run --isolated

@pytest.fixture(scope="module")
def host_services(units):
    """The host the sandboxes reach (HOST on the veth's peer): its DNS server and TCP port, and a
    resolver like systemd-resolved's: /etc/resolv.conf names a loopback stub, the upstream file
    names the DNS server (which a sandbox must get instead)."""
    run(["ip", "addr", "add", f"{HOST}/32", "dev", PEER]).ok()
    services = spawn([SYSTEM_PYTHON, HARNESS / "host_services.py", HOST, ANSWER, str(CONNECT_PORT)])
    stub = FILES / "stub-resolv.conf"
    stub.write_text("nameserver 127.0.0.53\noptions edns0\n")
    upstream = Path("/run/systemd/resolve/resolv.conf")
    upstream.parent.mkdir(parents=True, exist_ok=True)
    upstream.write_text(f"nameserver {HOST}\n")
    run(["mount", "--bind", stub, "/etc/resolv.conf"]).ok()
    try:
        if not wait_until(lambda: run(["bash", "-c", f"exec 3<>/dev/tcp/{HOST}/{CONNECT_PORT}"], timeout=5).rc == 0, 60, 0.5):
            raise HarnessError("the host's services did not start")
        yield
    finally:
        run(["umount", "/etc/resolv.conf"])
        stop(services)
        run(["ip", "addr", "del", f"{HOST}/32", "dev", PEER])


def isolated(*command: str, profile: str = SANDBOX_PROFILE, timeout: float = 300):
    """`linkcond run --isolated --profile PROFILE -- COMMAND` as a member of group linkcond (not
    root: the client makes the sandbox's namespaces in a user namespace of its own)."""
    return linkcond("run", "--isolated", "--profile", profile, "--", *command, timeout=timeout,
                    argv_prefix=as_member([]))


def json_lines(text: str) -> list[dict]:
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def sandbox_leftovers() -> list[str]:
    """The sandboxes' devices (lcsbN) and NAT tables left in this namespace; HarnessError when
    either cannot be read (an unreadable list is not an empty one)."""
    links = run(["ip", "-o", "link", "show"]).ok().out
    tables = run(["nft", "list", "tables"]).ok().out
    return sorted(set(re.findall(r"lcsb\d+", links)) | set(re.findall(r"linkcond_sandbox_\d+", tables)))


@pytest.mark.debian_kernel
@pytest.mark.checks(5)
def test_run_isolated_under_the_unit(check, stopped, host_services):
    """`run --isolated` by a member of group linkcond against the daemon under the unit: the
    command runs; the sandbox's resolv.conf names the stub's upstream, not the loopback stub,
    and a name resolves through it; the sandbox and its lease are gone after."""
    systemctl("start", SOCKET).ok()
    done = isolated(SYSTEM_PYTHON, str(HARNESS / "sandbox_inside.py"), NAME, HOST, str(CONNECT_PORT), "1")
    print(done.output)
    check.exit_status("run --isolated as a member, under the unit: the command's status", done, 0)
    inside = (json_lines(done.out) or [{}])[-1]
    check.equal("the sandbox's resolv.conf: the stub's upstream, not the loopback stub", [HOST], inside.get("nameservers"))
    check.equal("a name resolved inside the sandbox, through the host's DNS server", [ANSWER], inside.get("addresses"))
    check.equal("after the command: no sandbox device or NAT table left", [], sandbox_leftovers())
    listing = linkcond("status", "--all", "--json")
    try:
        sandboxes = sum(1 for c in json.loads(listing.out)["conditions"] if c.get("sandbox"))
    except (ValueError, KeyError, TypeError):
        sandboxes = f"unreadable ({listing.describe()})"
    check.equal("the lease ended with the command: no sandbox condition listed", 0, sandboxes)


@pytest.fixture(scope="module")
def host_probe_server(units, host_services):
    """The probe server on this namespace (HOST among its addresses), its control socket open to
    the sandbox's user."""
    work = FILES / "probe"
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    server = ProbeServer(HostNamespace(), work).start()
    server.ctl.chmod(0o666)
    yield server
    server.stop()


def through_sandbox(profile: str, ctl: Path) -> tuple[dict, float | None]:
    """In a sandbox under PROFILE: the one-way delays of 80 timestamped datagrams each way to
    HOST's probe server, and the fastest handshake of CONNECTIONS TCP connections to HOST, as
    the kernel measured it (TCP_INFO): under emulation the time connect() takes adds the
    process's wake-up after 100 ms asleep, 3 to 5 ms."""
    done = isolated("sh", "-c", '"$0" "$1" oneway --host "$2" --ctl "$3" --dir both --rate 20 --duration 4 && '
                    '"$0" "$4" "$5" "$2" "$6" "$7"', SYSTEM_PYTHON, str(HARNESS / "probe.py"), HOST, str(ctl),
                    str(HARNESS / "sandbox_inside.py"), NAME, str(CONNECT_PORT), str(CONNECTIONS), profile=profile)
    print(done.output)
    documents = json_lines(done.out)
    oneway = next((d for d in documents if "up" in d), {})
    handshakes = next((d["handshake_rtt_ms"] for d in documents if d.get("handshake_rtt_ms")), None)
    return oneway, min(handshakes) if handshakes else None


def tenth_percentile(oneway: dict, direction: str) -> float | None:
    return oneway.get(direction, {}).get("quantiles_ms", {}).get("0.1")


@pytest.mark.debian_kernel
@pytest.mark.timed
@pytest.mark.checks(5)
def test_run_isolated_delays(check, stopped, host_services, host_probe_server):
    """Through the sandbox of `run --isolated` under the unit, LC Sandbox Test's delays against
    the same sandbox unshaped, measured just before: 40 ms up and 60 ms down one way each (10th
    percentile of 80 timestamped datagrams each way), and a TCP handshake's round trip (the
    fastest of 40)."""
    systemctl("start", SOCKET).ok()
    base, base_connect = through_sandbox(UNSHAPED_PROFILE, host_probe_server.ctl)
    shaped, connect = through_sandbox(SANDBOX_PROFILE, host_probe_server.ctl)
    for direction, delay in (("up", UP_MS), ("down", DOWN_MS)):
        got = shaped.get(direction, {})
        check.equal(f"sandbox {direction}: every datagram arrived", got.get("sent", "no measurement"), got.get("received"))
        check.near(f"sandbox {direction}: one-way delay", minus(tenth_percentile(shaped, direction),
                                                                tenth_percentile(base, direction)),
                   delay, ONEWAY_TOLERANCE, why=f"the sandbox unshaped: {tenth_percentile(base, direction)} ms")
    check.near("sandbox: a TCP handshake's round trip", minus(connect, base_connect), UP_MS + DOWN_MS,
               ROUND_TRIP_TOLERANCE, why=f"{UP_MS} up + {DOWN_MS} down; the sandbox unshaped: {base_connect} ms")


# ---------------------------------------------------------------- readiness

@pytest.mark.checks(1)
def test_readiness_waits_for_ready(check, stopped):
    """Type=notify, the other way round: the same daemon without $NOTIFY_SOCKET answers on the
    socket, yet systemd keeps the service "activating": it waits for READY=1, not for the process."""
    stopped.dropin("zz-no-notify.conf", f"""[Service]
ExecStart=
ExecStart=/usr/bin/env -u NOTIFY_SOCKET {BIN}/linkcondd $LINKCONDD_OPTIONS
TimeoutStartSec=300
Restart=no
""")
    stopped.reload()
    try:
        systemctl("start", "--no-block", SERVICE).ok()
        # Asked until it answers: the start is queued (--no-block), and a connection before the
        # socket unit listens is refused at once (a loaded host once lost that race).
        status = wait_until(lambda: answers(10), 120, 0.5)
        first = prop("ActiveState")
        time.sleep(3)
        second = prop("ActiveState")
        check.equal("without READY=1: serving, still activating 3 s later", "serving, activating, activating",
                    f"{'serving' if status else 'no answer'}, {first}, {second}")
    finally:
        stopped.stop()
        stopped.remove_dropin("zz-no-notify.conf")
        stopped.reload()
