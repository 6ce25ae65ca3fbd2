"""Packet traces of a condition (`linkcond capture`, `GET /v1/conditions/{id}/capture`): the
condition's packets, both directions after the condition, flagged as the app sees them, with
the condition's changes as notes at their time; read by tshark and capinfos (Wireshark's own
readers, nobody here wrote them), which must read every trace without a word on stderr. Real
pings through a real netem in User-mode Linux: a request is captured as it leaves the uplink's
tree, its reply as it leaves the downlink's, so the gap between them in the trace is the
downlink's delay.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from harness.packet_traces import READER_ENVIRONMENT, capinfos, gaps_ms, read_trace, statistics
from harness.system import SYSTEM_PYTHON, as_stranger, spawn, stop, wait_until

CHECKS = 14 + 3 + 5 + 5 + 8 + 3 + 10 + 4 + 2 + 6 + 8 + 5

HARNESS = Path(__file__).resolve().parent / "harness"
#: What harness/dns_server.py answers for every name under linkcond.test.
WEB_NAME, WEB_ADDRESS = "web.linkcond.test", "192.0.2.1"
HTTP_PORT, HTTPS_PORT = 8080, 8443

DOWN_BEFORE, DOWN_AFTER, UP = 40, 80, 10
PROFILES = {
    "lc-trace-before.yaml": f"name: LC Capture Before\ndownlink: {{ delay: {DOWN_BEFORE}ms }}\nuplink: {{ delay: {UP}ms }}\n",
    "lc-trace-after.yaml": f"name: LC Capture After\ndownlink: {{ delay: {DOWN_AFTER}ms }}\nuplink: {{ delay: {UP}ms }}\n",
    "lc-trace-loss.yaml": "name: LC Capture Loss\ndownlink: { loss: 50% }\n",
    "lc-trace-loss-both.yaml": "name: LC Capture Loss Both\ndownlink: { loss: 30% }\nuplink: { loss: 30% }\n",
}
#: A reply is captured this long after its request at most beyond the downlink's delay: netem
#: fires within 0.1 ms under User-mode Linux; the rest is the server's answer and the machine
#: (one reply of the 30 at +3.04 and at +3.83 ms in two of make test's timed phases, the others
#: within +1.5 ms).
GAP_TOLERANCE_MS = 5
PINGS = 10


def begin_capture(daemon, path: Path, *args: str) -> subprocess.Popen:
    """`linkcond capture -w PATH ARGS` in the background, once its trace has begun."""
    path.unlink(missing_ok=True)
    process = spawn(daemon.client_argv("capture", "-w", str(path), *args), stderr=subprocess.PIPE)
    if not wait_until(lambda: path.exists() and path.stat().st_size > 0 or process.poll() is not None, 20):
        stop(process)
        raise AssertionError("the capture did not begin within 20 s")
    return process


def capture_while(daemon, path: Path, args: tuple[str, ...], during) -> int:
    """`linkcond capture -w PATH ARGS` (ARGS with a limit) while DURING() runs; its exit status."""
    capture = begin_capture(daemon, path, *args)
    try:
        during()
        capture.communicate(timeout=30)
    finally:
        stop(capture)
    return capture.returncode


def ping(topo, family: str, count: int = PINGS) -> None:
    host = topo.s4 if family == "IPv4" else topo.s6
    topo.client.run("ping", "-4" if family == "IPv4" else "-6", "-c", str(count), "-i", "0.05", "-W", "2", host, timeout=60)


@pytest.mark.timed
@pytest.mark.checks(14)
def test_a_trace_holds_both_ways_and_the_switch(check, daemon, topo, work):
    """A capture of the interface's condition while pings cross it, IPv4 and IPv6, and the
    profile is switched halfway: capinfos and tshark read it without a word; each request is
    outbound and each reply inbound, all of them there; the gap between request and reply is
    the downlink's delay, before and after the switch; the notes name the profile in force as
    the capture began and the switch, at its time between the two kinds of gaps."""
    trace_file = work / "both-ways.pcapng"
    daemon.cli("activate", "LC Capture Before").ok()

    def traffic():
        ping(topo, "IPv4")
        ping(topo, "IPv6")
        daemon.cli("activate", "LC Capture After").ok()
        ping(topo, "IPv4")

    check.equal("capture: exit status", 0, capture_while(daemon, trace_file, ("--for", "8s"), traffic))
    info = capinfos(trace_file)
    check.equal("capinfos: reads it without a word on stderr", (0, ""), (info.returncode, info.stderr.strip()))
    trace = read_trace(trace_file)
    check.equal("tshark: reads it without a word on stderr", (0, ""), (trace.rc, trace.stderr.strip()))
    check.equal("the packets' interface is the condition's target", [topo.interface],
                sorted({p.interface for p in trace.packets if p.interface != "linkcond"}))
    check.equal("IPv4: every request, outbound", PINGS * 2, len(trace.echoes("IPv4", "request", "out")))
    check.equal("IPv4: every reply, inbound", PINGS * 2, len(trace.echoes("IPv4", "reply", "in")))
    check.equal("IPv6: every request, outbound", PINGS, len(trace.echoes("IPv6", "request", "out")))
    check.equal("IPv6: every reply, inbound", PINGS, len(trace.echoes("IPv6", "reply", "in")))
    check.equal("no echo without its direction", [], [p.number for p in trace.packets if p.kind and not p.direction])
    notes = trace.notes
    check.contains("the first note: the profile in force as the capture began", notes[0].comment if notes else "",
                   "LC Capture Before (in force as the capture began)")
    switch = next((n for n in notes if "LC Capture After (activate)" in n.comment), None)
    check.true("a note for the switch", switch is not None, [n.comment for n in notes], "LC Capture After (activate)")
    at = switch.seconds if switch else 0
    before = gaps_ms(trace, "IPv4", before=at) + gaps_ms(trace, "IPv6", before=at)
    after = gaps_ms(trace, "IPv4", after=at)
    check.equal("the requests before and after the note", (PINGS * 2, PINGS), (len(before), len(after)))
    check.true(f"before the switch: every reply {DOWN_BEFORE} ms after its request, the downlink's delay (to +{GAP_TOLERANCE_MS} ms)",
               bool(before) and all(DOWN_BEFORE <= gap <= DOWN_BEFORE + GAP_TOLERANCE_MS for gap in before), sorted(before),
               f"{DOWN_BEFORE}..{DOWN_BEFORE + GAP_TOLERANCE_MS} ms")
    check.true(f"after the switch: every reply {DOWN_AFTER} ms after its request (to +{GAP_TOLERANCE_MS} ms)",
               bool(after) and all(DOWN_AFTER <= gap <= DOWN_AFTER + GAP_TOLERANCE_MS for gap in after), sorted(after),
               f"{DOWN_AFTER}..{DOWN_AFTER + GAP_TOLERANCE_MS} ms")


@pytest.mark.checks(3)
def test_a_capture_begun_while_off_follows_the_tree(check, daemon, topo, work):
    """A capture begun with the condition off reads what arrives at the interface; once a
    profile makes the downlink's tree, it reads what leaves the IFB, so the replies after the
    switch are the delay behind their requests (captured before the tree, they would not be)."""
    trace_file = work / "follows.pcapng"

    def traffic():
        ping(topo, "IPv4", 3)
        daemon.cli("activate", "LC Capture Before").ok()
        ping(topo, "IPv4", 5)

    capture_while(daemon, trace_file, ("--for", "5s"), traffic)
    trace = read_trace(trace_file)
    switch = next((n.seconds for n in trace.notes if "LC Capture Before (activate)" in n.comment), None)
    check.true("a note for the switch", switch is not None, [n.comment for n in trace.notes], "LC Capture Before (activate)")
    before, after = gaps_ms(trace, "IPv4", before=switch or 0), gaps_ms(trace, "IPv4", after=switch or 0)
    check.true("before: the replies as they arrived (no delay)", len(before) == 3 and max(before) < DOWN_BEFORE, sorted(before),
               f"3, each under {DOWN_BEFORE} ms")
    check.true(f"after: the replies as they left the IFB's tree, at least {DOWN_BEFORE} ms on",
               len(after) == 5 and min(after) >= DOWN_BEFORE, sorted(after), f"5, each at least {DOWN_BEFORE} ms")


@pytest.mark.checks(5)
def test_a_peer_s_trace_holds_its_packets_alone(check, daemon, topo, work):
    """`capture --to` the server's IPv4 address while pings go to both of its addresses: the
    trace has the IPv4 echoes and no IPv6 packet at all (the filter runs in the kernel)."""
    trace_file = work / "peer.pcapng"

    def traffic():
        ping(topo, "IPv6", 5)
        ping(topo, "IPv4", 5)

    check.equal("capture: exit status", 0, capture_while(daemon, trace_file, ("--to", topo.s4, "--for", "5s"), traffic))
    trace = read_trace(trace_file)
    check.equal("tshark: reads it without a word", (0, ""), (trace.rc, trace.stderr.strip()))
    check.equal("its IPv4 echoes each way", (5, 5), (len(trace.echoes("IPv4", "request", "out")), len(trace.echoes("IPv4", "reply", "in"))))
    check.equal("no IPv6 packet", 0, len([p for p in trace.packets if p.family == "IPv6"]))
    # The peer's own: its IPv4 echoes, and the ARP for its address that a filter on a host takes too
    # (as tcpdump's `host` does), whenever the neighbour entry is refreshed during the capture.
    check.equal("only packets to or from the peer, and notes", [],
                [(p.number, p.addresses) for p in trace.packets if p.interface != "linkcond" and topo.s4 not in p.addresses])


@pytest.mark.checks(5)
def test_a_stream_to_a_reader_and_a_reader_that_goes(check, daemon, topo, work):
    """`capture -w - --count 6 | tshark -r -` reads the stream as it comes; a reader that stops
    (`| head -c 100`) ends the capture, the daemon answers on, and the history has its end."""
    pinging = spawn(topo.client.argv("ping", "-c", "40", "-i", "0.05", topo.s4))
    try:
        streamed = subprocess.run(daemon.client_argv("capture", "-w", "-", "--count", "6"), capture_output=True, timeout=60)
        check.equal("capture -w -: exit status", 0, streamed.returncode)
        trace = read_trace("-", stdin=streamed.stdout)
        check.equal("tshark -r -: reads the stream without a word, 6 packets and the first note", (0, "", 7),
                    (trace.rc, trace.stderr.strip(), len(trace.packets)))
        cut = subprocess.run(["sh", "-c", " ".join(daemon.client_argv("capture", "-w", "-")) + " | head -c 100 > /dev/null"],
                             capture_output=True, timeout=60)
        check.equal("a reader that goes: the capture ends with it", 0, cut.returncode)
    finally:
        stop(pinging)
    check.equal("the daemon answers on", 0, daemon.cli("status").rc)
    ended = [e for e in daemon.api.history(20) if e.get("reason") == "capture" and "ended" in (e.get("detail") or "")]
    check.true("the history has both captures' ends", len(ended) >= 2, [e.get("detail") for e in ended], ">= 2 ended")


@pytest.mark.checks(8)
def test_who_may_capture_and_absurd_limits(check, daemon, topo, work):
    """A user outside the group is refused (the trace holds other people's packets), and no
    file is left; a member may capture; limits out of range are refused by the client and by
    the API (400, bad-request), and none of it reaches the history."""
    shared = work / "shared"
    shared.mkdir(exist_ok=True)
    shared.chmod(0o777)
    before = len(daemon.api.history(200))
    refused = daemon.cli("capture", "-w", str(shared / "stranger.pcapng"), "--for", "1s", user="stranger")
    check.equal("a stranger: refused", 1, refused.rc)
    check.contains("a stranger: told why", refused.err, "other people's packets")
    check.true("a stranger: no file left", not (shared / "stranger.pcapng").exists(), (shared / "stranger.pcapng").exists(), False)
    allowed = daemon.cli("capture", "-w", str(shared / "member.pcapng"), "--for", "1s", user="member")
    check.equal("a member: captures", (0, True), (allowed.rc, (shared / "member.pcapng").exists()))
    check.equal("--snaplen 9: refused by the client", 64, daemon.cli("capture", "-w", str(shared / "x"), "--snaplen", "9").rc)
    streamed = daemon.api.request("GET", "/v1/condition/capture?for=1s")
    check.equal("the API: a capture is a 200 pcapng stream", (200, "application/x-pcapng", b"\x0a\x0d\x0d\x0a"),
                (streamed.status, streamed.headers.get("content-type", streamed.headers.get("Content-Type")), streamed.body[:4]))
    answer = daemon.api.request("GET", "/v1/condition/capture?count=0")
    check.equal("the API: count=0 is a 400 bad-request", (400, "bad-request"), (answer.status, (answer.json or {}).get("error", {}).get("code")))
    captures = [e for e in daemon.api.history(200)[before:] if e.get("reason") == "capture"]
    check.equal("the history: the member's and the API's captures alone, each begun and ended", 4, len(captures))


@pytest.mark.checks(3)
def test_the_condition_s_drops_are_counted(check, daemon, topo, work):
    """Under 50% loss on the downlink, the replies netem dropped never reach the trace, and its
    statistics block counts them: the condition's drops while it ran, as the kernel counted them."""
    trace_file = work / "loss.pcapng"
    daemon.cli("activate", "LC Capture Loss").ok()
    capture_while(daemon, trace_file, ("--for", "5s"), lambda: ping(topo, "IPv4", 40))
    trace = read_trace(trace_file)
    requests, replies = len(trace.echoes("IPv4", "request", "out")), len(trace.echoes("IPv4", "reply", "in"))
    check.equal("every request captured; some replies lost", (40, True), (requests, 0 < replies < 40))
    counts = statistics(trace_file)
    check.equal("the statistics: the condition's drops are the replies lost", 40 - replies, counts.get("condition_drops"))
    check.contains("the statistics' comment says so", counts.get("comment", ""), "dropped by the condition")


@pytest.mark.debian_kernel
@pytest.mark.checks(10)
def test_dropped_packets_are_kept_and_marked(check, daemon, topo, work):
    """`capture --keep-dropped` under 30% loss each way, 40 pings of each family: every request
    is in the trace once, on the interface's side if it crossed the uplink, on the `… dropped`
    interface if the uplink dropped it; every reply to a request that crossed likewise; each
    dropped one outbound or inbound as it went, its comment saying the kernel's reason; as many
    kept as the condition's counters say it dropped; the kernel's drop monitor stopped after it.
    Debian's kernel (qemu): its drop monitor reports each packet a queueing discipline frees."""
    trace_file = work / "dropped.pcapng"
    daemon.cli("activate", "LC Capture Loss Both").ok()

    def traffic():
        ping(topo, "IPv4", 40)
        ping(topo, "IPv6", 40)

    capture = begin_capture(daemon, trace_file, "--keep-dropped", "--for", "15s")
    try:
        traffic()
        _, errors = capture.communicate(timeout=30)
    finally:
        stop(capture)
    check.true("capture --keep-dropped: its exit status", capture.returncode == 0, f"{capture.returncode}: {(errors or b'').decode().strip()}", 0)
    trace = read_trace(trace_file)
    check.equal("tshark reads it without a word", (0, ""), (trace.rc, trace.stderr.strip()))
    kept = [p for p in trace.packets if p.interface.endswith(" dropped")]
    for family in ("IPv4", "IPv6"):
        def sequences(kind, direction, dropped):
            return sorted(p.sequence for p in trace.echoes(family, kind, direction) if p.interface.endswith(" dropped") == dropped)

        sent, lost_up = sequences("request", "out", False), sequences("request", "out", True)
        answered, lost_down = sequences("reply", "in", False), sequences("reply", "in", True)
        check.true(f"{family}: each request once, crossed or kept as dropped on the uplink ({len(lost_up)} dropped)",
                   sorted(sent + lost_up) == list(range(1, 41)), f"crossed {sent}; dropped {lost_up}", "1 to 40, each once")
        check.true(f"{family}: each reply to a request that crossed once, arrived or kept as dropped on the downlink ({len(lost_down)} dropped)",
                   sorted(answered + lost_down) == sent, f"arrived {answered}; dropped {lost_down}", f"the {len(sent)} that crossed, each once")
    reasons = sorted({p.comment.split(")")[0] + ")" for p in kept})
    check.equal("each dropped packet's comment: the kernel's reason, a queueing discipline's drop", ["dropped by the condition (QDISC_DROP)"],
                reasons)
    counts = statistics(trace_file)
    check.equal(f"as many kept as the condition's counters say it dropped while the capture ran ({counts.get('comment', '')})",
                counts.get("condition_drops"), len(kept))
    check.contains("the statistics' comment says how many were kept", counts.get("comment", ""), f"{len(kept)} of them kept in the trace")
    # Running, the monitor holds a reference to its module; stopped, none.
    check.equal("after the capture, the kernel's drop monitor stopped (its module's references)", "0",
                Path("/sys/module/drop_monitor/refcnt").read_text().strip())


@pytest.mark.checks(4)
def test_run_captures_its_command(check, daemon, topo, work):
    """`linkcond run --profile P --capture FILE -- ping …`: the trace holds the command's
    echoes each way, begins with P marked as in force, and the replies are P's downlink delay
    behind their requests."""
    trace_file = work / "run.pcapng"
    trace_file.unlink(missing_ok=True)
    ran = topo.client.run(*daemon.client_argv("run", "--profile", "LC Capture Before", "--capture", str(trace_file), "--",
                                              "ping", "-4", "-c", "5", "-i", "0.05", topo.s4), timeout=60)
    check.equal("run: the command's exit status", 0, ran.rc)
    trace = read_trace(trace_file)
    check.equal("its echoes each way, read without a word", (5, 5, ""),
                (len(trace.echoes("IPv4", "request", "out")), len(trace.echoes("IPv4", "reply", "in")), trace.stderr.strip()))
    check.contains("the profile marked where the capture began", trace.notes[0].comment if trace.notes else "",
                   "LC Capture Before (in force as the capture began)")
    gaps = gaps_ms(trace, "IPv4")
    check.true(f"each reply at least the downlink's {DOWN_BEFORE} ms behind its request", len(gaps) == 5 and min(gaps) >= DOWN_BEFORE,
               sorted(gaps), f"5, each >= {DOWN_BEFORE} ms")


@pytest.mark.checks(8)
def test_a_ring_of_files_keeps_the_newest_whole(check, daemon, topo, work):
    """`capture --file-size 64KB --files 3` under 400 large pings: three files are left, the
    newest, each at most 64 KB, each read by tshark alone, each beginning with the condition in
    force; the requests in them run on without a gap to the last ping, and the last file closes
    with the statistics. `--max-size 100KB` stops a capture by itself, near that size."""
    ring = work / "ring"
    shutil.rmtree(ring, ignore_errors=True)
    ring.mkdir()
    daemon.cli("activate", "LC Capture Before").ok()
    capture = spawn(daemon.client_argv("capture", "-w", str(ring / "trace.pcapng"), "--file-size", "64KB", "--files", "3", "--for", "10s"),
                    stderr=subprocess.PIPE, text=True)
    try:
        if not wait_until(lambda: any(ring.iterdir()) or capture.poll() is not None, 20):
            raise AssertionError("the capture did not begin within 20 s")
        topo.client.run("ping", "-4", "-c", "400", "-s", "1200", "-i", "0.005", "-W", "2", topo.s4, timeout=60)
        _, said = capture.communicate(timeout=30)
    finally:
        stop(capture)
    check.equal("capture: exit status, and where the trace is", (0, True, True),
                (capture.returncode, "the trace is in 3 files" in said, "older removed" in said))
    files = sorted(ring.iterdir())
    numbers = [int(f.stem.rsplit("-", 1)[1]) for f in files]
    check.true("three files, the newest three", len(files) == 3 and numbers == list(range(numbers[0], numbers[0] + 3)) and numbers[0] > 1,
               [f.name for f in files], "trace-000NN.pcapng, three in a row, not the first")
    traces = [read_trace(f) for f in files]
    check.equal("tshark: reads each without a word", [(0, "")] * 3, [(t.rc, t.stderr.strip()) for t in traces])
    sizes = [f.stat().st_size for f in files]
    check.true("each file at most 64 KB", max(sizes) <= 64_000, sizes, "<= 64000 bytes each")
    firsts = [t.packets[0].comment if t.packets else "" for t in traces]
    check.true("each file begins with the note of the condition in force", all("LC Capture Before" in c for c in firsts), firsts,
               "LC Capture Before in each")
    sequences = [p.sequence for t in traces for p in t.echoes("IPv4", "request", "out")]
    check.true("the requests run on across the files without a gap, to the last ping",
               bool(sequences) and sequences == list(range(sequences[0], sequences[0] + len(sequences))) and sequences[-1] == 400,
               sequences[:3] + ["..."] + sequences[-3:], "consecutive, ending at 400")
    check.true("the last file closes with the statistics", "delivered" in statistics(files[-1]), statistics(files[-1]), "isb_usrdeliv")

    limited = work / "limited.pcapng"
    capture = spawn(daemon.client_argv("capture", "-w", str(limited), "--max-size", "100KB", "--for", "30s"), stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: limited.exists() or capture.poll() is not None, 20)
        pinging = spawn(topo.client.argv("ping", "-4", "-c", "2000", "-s", "1200", "-i", "0.005", topo.s4))
        try:
            _, said = capture.communicate(timeout=25)
        finally:
            stop(pinging)
    finally:
        stop(capture)
    size = limited.stat().st_size if limited.exists() else 0
    check.true("--max-size 100KB: stops by itself, at 100 KB of packets (and the statistics), and says so",
               capture.returncode == 0 and 90_000 < size <= 101_000 and "stopped at --max-size 100KB" in said,
               (capture.returncode, size, said.strip()), "exit 0, 90 000 < size <= 101 000, told")


#: Three connections to a server on 127.0.0.1:LOCAL_PORT in the same process, each sending a
#: line and reading it back: every packet crosses lo twice, out and in.
LOCAL_PORT = 8090
LOCAL_ECHOES = f"""
import socket, threading
server = socket.create_server(("127.0.0.1", {LOCAL_PORT}))
def serve():
    for _ in range(3):
        connection, _ = server.accept()
        with connection:
            connection.sendall(connection.recv(100))
threading.Thread(target=serve, daemon=True).start()
for n in range(3):
    with socket.create_connection(("127.0.0.1", {LOCAL_PORT})) as client:
        client.sendall(b"hello %d" % n)
        assert client.recv(100) == b"hello %d" % n
"""


@pytest.mark.timed
@pytest.mark.checks(5)
def test_a_loopback_port_s_trace_has_each_packet_once(check, daemon, topo, work):
    """`capture --to 127.0.0.1:PORT/tcp` of a local server's condition: each packet crosses lo
    twice, yet the trace has it once, after its own tree: what goes to the port outbound (after
    the uplink's 10 ms), what comes from it inbound (after the downlink's 40 ms), so a SYN-ACK is
    the downlink's delay behind its SYN."""
    peer = f"127.0.0.1:{LOCAL_PORT}/tcp"
    daemon.cli("activate", "--to", peer, "LC Capture Before").ok()
    trace_file = work / "loopback.pcapng"
    try:
        code = capture_while(daemon, trace_file, ("--to", peer, "--for", "6s"),
                             lambda: topo.client.run(SYSTEM_PYTHON, "-c", LOCAL_ECHOES, timeout=60).ok())
    finally:
        daemon.cli("off", "--to", peer)
    fields = ("frame.time_epoch", "frame.packet_flags_direction", "tcp.srcport", "tcp.dstport", "tcp.flags.str", "tcp.seq_raw", "tcp.ack_raw")
    read = subprocess.run(as_stranger([*READER_ENVIRONMENT, "tshark", "-r", str(trace_file), "-Y", "tcp", "-T", "fields", "-E", "separator=\t",
                                       *[a for f in fields for a in ("-e", f)]]), capture_output=True, text=True, timeout=120)
    check.equal("capture and tshark: exit status, not a word on stderr", (0, 0, ""), (code, read.returncode, read.stderr.strip()))
    rows = [line.split("\t") for line in read.stdout.splitlines()]
    segments = [(float(r[0]), int(r[1], 16) & 3, int(r[2]), int(r[3]), r[4].replace("·", ""), r[5], r[6])
                for r in rows if len(r) == len(fields)]
    to_port = [s for s in segments if s[3] == LOCAL_PORT]
    from_port = [s for s in segments if s[2] == LOCAL_PORT]
    check.equal("the three connections' SYNs and SYN-ACKs, each once", (3, 3),
                (len([s for s in to_port if s[4] == "S"]), len([s for s in from_port if s[4] == "AS"])))
    check.equal("no segment twice", [], [s for n, s in enumerate(segments) if s[1:] in [t[1:] for t in segments[:n]]])
    check.equal("to the port outbound, from it inbound", ({2}, {1}), ({s[1] for s in to_port}, {s[1] for s in from_port}))
    syns = {s[2]: s[0] for s in to_port if s[4] == "S"}
    gaps = sorted(round((s[0] - syns[s[3]]) * 1000, 1) for s in from_port if s[4] == "AS" and s[3] in syns)
    check.true(f"each SYN-ACK the downlink's {DOWN_BEFORE} ms behind its SYN (to +{GAP_TOLERANCE_MS} ms)",
               len(gaps) == 3 and all(DOWN_BEFORE <= g <= DOWN_BEFORE + GAP_TOLERANCE_MS for g in gaps), gaps,
               f"3, each {DOWN_BEFORE}–{DOWN_BEFORE + GAP_TOLERANCE_MS} ms")


@pytest.fixture
def web_by_name(topo, work):
    """A web server at web.linkcond.test (192.0.2.1, an address of the server's reached through
    the link), plain HTTP and HTTPS, and the client's resolver the suite's DNS server on the
    server, so that the name is looked up over the conditioned link."""
    topo.server.ip("addr", "add", f"{WEB_ADDRESS}/32", "dev", "lo")
    topo.client.ip("route", "add", f"{WEB_ADDRESS}/32", "via", topo.s4)
    netns_etc = Path("/etc/netns") / topo.client.name
    netns_etc.mkdir(parents=True, exist_ok=True)
    (netns_etc / "resolv.conf").write_text(f"nameserver {topo.s4}\noptions timeout:2 attempts:2\n")
    web_dir = work / "web"
    web_dir.mkdir(exist_ok=True)
    for old in ("dns-ready", "web-ready"):
        (web_dir / old).unlink(missing_ok=True)
    servers = [spawn(topo.server.argv(SYSTEM_PYTHON, HARNESS / "dns_server.py", "--address", topo.s4,
                                      "--log", web_dir / "dns-log", "--ready", web_dir / "dns-ready")),
               spawn(topo.server.argv(SYSTEM_PYTHON, HARNESS / "web.py", "serve", "--http", HTTP_PORT, "--https", HTTPS_PORT,
                                      "--dir", web_dir, "--ready", web_dir / "web-ready"))]
    try:
        if not wait_until(lambda: (web_dir / "dns-ready").exists() and (web_dir / "web-ready").exists(), 30):
            raise AssertionError("no DNS or web server on the server")
        yield
    finally:
        for server in servers:
            stop(server)
        shutil.rmtree(netns_etc, ignore_errors=True)
        topo.client.ip("route", "del", f"{WEB_ADDRESS}/32")
        topo.server.ip("addr", "del", f"{WEB_ADDRESS}/32", "dev", "lo")


@pytest.mark.checks(6)
def test_run_summary_names_what_the_command_talked_to(check, daemon, topo, work, web_by_name):
    """`run --capture FILE --json-summary J` of a command that fetches http:// and https:// URLs
    of a name: the summary names the web server by its address with the name DNS gave it, its
    two ports, bytes and packets each way, and the resolver; it warns of the plaintext request
    alone (its host and path), not of the one over TLS, on stderr and in the JSON."""
    trace_file, summary_file = work / "summary.pcapng", work / "summary.json"
    for old in (trace_file, summary_file):
        old.unlink(missing_ok=True)
    plain, secure = f"http://{WEB_NAME}:{HTTP_PORT}/secret?user=a", f"https://{WEB_NAME}:{HTTPS_PORT}/over-tls"
    ran = topo.client.run(*daemon.client_argv("run", "--profile", "LC Capture Before", "--capture", trace_file,
                                              "--json-summary", summary_file, "--",
                                              SYSTEM_PYTHON, HARNESS / "web.py", "fetch", plain, secure), timeout=90)
    print(ran.err)
    check.equal("run: both fetches answered", [[plain, 200], [secure, 200]],
                json.loads(ran.out) if ran.rc == 0 and ran.out.strip() else ran.output, require=True)
    trace = (json.loads(summary_file.read_text()) if summary_file.exists() else {}).get("trace") or {}
    peers = {peer["address"]: peer for peer in trace.get("peers", [])}
    web = peers.get(WEB_ADDRESS, {})
    check.equal("summary: the web server, with the name DNS gave it, and both its ports",
                ([WEB_NAME], ["tcp/8080", "tcp/8443"]), (web.get("names"), sorted(web.get("services", []))))
    check.true("summary: bytes and packets each way, no retransmission or reset on a clean link",
               all(web.get(k, 0) > 0 for k in ("bytesOut", "bytesIn", "packetsOut", "packetsIn"))
               and web.get("retransmissions") == 0,
               {k: web.get(k) for k in ("bytesOut", "bytesIn", "packetsOut", "packetsIn", "retransmissions", "resets")},
               "each > 0, no retransmission")
    check.equal("summary: the resolver, by DNS", ["udp/53"], peers.get(topo.s4, {}).get("services"))
    check.equal("summary: the plaintext request alone, with its host and path (not the one over TLS)",
                [{"method": "GET", "host": f"{WEB_NAME}:{HTTP_PORT}", "path": "/secret?user=a", "peer": WEB_ADDRESS}],
                trace.get("plaintextHTTP"))
    check.contains("stderr: the warning, naming the URL", ran.err,
                   f"warning: plaintext HTTP: GET http://{WEB_NAME}:{HTTP_PORT}/secret?user=a (to {WEB_ADDRESS})")


@pytest.mark.checks(2)
def test_ctrl_c_closes_the_trace_with_its_statistics(check, daemon, topo, work):
    """`linkcond capture` without a limit, interrupted (SIGINT): it exits 0 and the trace ends
    with its statistics, which say the client ended it."""
    trace_file = work / "interrupted.pcapng"
    capture = begin_capture(daemon, trace_file)
    ping(topo, "IPv4", 3)
    capture.send_signal(signal.SIGINT)
    try:
        capture.communicate(timeout=30)
    finally:
        stop(capture)
    check.equal("capture: exit status after SIGINT", 0, capture.returncode)
    check.contains("its statistics say why it ended", statistics(trace_file).get("comment", ""), "ended: the client ended it")
