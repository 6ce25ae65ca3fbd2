"""What each condition's shaping has done, per direction, as the daemon counts it: GET /v1/stats,
the same counters in GET /metrics on the control socket and on the TCP listener of
`--metrics-listen`, `linkcond status`'s traffic line, `linkcond watch` into a file and `run
--json-summary`; and that listener, which any local process may reach, under hostile requests
and under a connection flood.

Counts are of known traffic: 200 datagrams up under 100% loss all dropped by the loss (and
counted by the kernel's netem), 200 down all carried, each frame's bytes, IPv4 and IPv6; a burst
of 300 into 4 kbit/s, dropped by the queue, queued, and drained at the rate (±5%, timed).
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from harness.api import NoAnswer
from harness.metrics import (DIRECTIONS, as_metrics, counters, fetch_tcp, flood_result, grown, picked, samples,
                             start_flood)
from harness.probes import PROBE
from harness.system import HARNESS, SYSTEM_PYTHON, HarnessError, as_stranger, wait_until
from harness.tc import qdisc, wait_drained
from harness.topology import families

CHECKS = 58

METRICS = "127.0.0.1:9464"
DAEMON_ARGS = ["--metrics-listen", METRICS]

#: A datagram of the loss probe on the wire: 48 bytes of payload, UDP, IP and Ethernet headers.
FRAME = {"IPv4": 48 + 8 + 20 + 14, "IPv6": 48 + 8 + 40 + 14}
#: Packets of the host's own a count may hold besides the probe's (none are expected on these
#: links: ARP and neighbour discovery are exempt, the namespaces send nothing else).
OWN = 3


def scrape_url(path: str = "/metrics") -> str:
    return f"http://{METRICS}{path}"


# ---------------------------------------------------------------- counters of known traffic

@pytest.mark.checks(19)
def test_loss_and_delivery_counted_per_direction(check, daemon, topo, device, probes):
    """LC Test Drop (100% loss up, 20 ms down): 200 datagrams each way, IPv4 then IPv6. Up, every
    one dropped by the loss, as the kernel's netem counted too; down, every one carried, each
    frame's bytes."""
    cid = topo.interface
    daemon.api.must(daemon.api.activate("LC Test Drop"))
    for family, host in families(topo.s4, topo.s6):
        frame = FRAME[family]
        before = counters(daemon.api, cid)
        netem_drops = qdisc(device, "7a10:")["drops"]
        received = probes.loss([f"up:{host}", f"down:{host}"], 200, gap=0.002)
        after = counters(daemon.api, cid)
        netem_drops = qdisc(device, "7a10:")["drops"] - netem_drops
        check.equal(f"{family}: the server got none of the 200 sent up, the client all 200 sent down", [0, 200],
                    [received[f"up:{host}"], received[f"down:{host}"]])
        dropped = grown(before, after, "uplink", "droppedPackets")
        check.between(f"{family} uplink: dropped", dropped, 200, 200 + OWN, "packets", promised="the 200 sent")
        check.between(f"{family} uplink: the kernel's netem dropped them", netem_drops, 200, 200 + OWN, "packets",
                      promised="the 200 sent")
        check.equal(f"{family} uplink: those drops are the loss's, none the queue's (droppedByLoss, droppedByQueue)",
                    [dropped, 0],
                    [grown(before, after, "uplink", "droppedByLoss"), grown(before, after, "uplink", "droppedByQueue")])
        check.between(f"{family} uplink: carried under 100% loss", grown(before, after, "uplink", "packets"), 0, OWN,
                      "packets", promised="none")
        carried = grown(before, after, "downlink", "packets")
        check.between(f"{family} downlink: carried", carried, 200, 200 + OWN, "packets", promised="the 200 sent")
        extra = max(0, (carried or 0) - 200)
        check.between(f"{family} downlink: bytes carried, {frame} for each frame sent (and the host's own packets)",
                      grown(before, after, "downlink", "bytes"), 200 * frame, 200 * frame + extra * 1514, "bytes",
                      promised=f"{200 * frame} (+ {extra} packets of the host's own, at most 1514 bytes each)")
        check.equal(f"{family} downlink: dropped", 0, grown(before, after, "downlink", "droppedPackets"))
        check.equal(f"{family} downlink: queued once delivered", 0, after["downlink"].get("queuedPackets"))
    check.contains("status shows the counters on a traffic line", daemon.cli("status").out, "traffic: down ")


def totals(stats: dict) -> dict:
    """A stats document's counters, without the rates (which change with every read)."""
    return {d: {k: v for k, v in stats[d].items() if not k.endswith("PerSecond")} for d, _ in DIRECTIONS}


def steady_readings(daemon, topo, cid: str, tries: int = 5):
    """GET /v1/stats, GET /metrics on the socket and on TCP, and GET /v1/stats again, until the
    two stats agree (nothing moved meanwhile): (stats, socket reply, TCP reply)."""
    for _ in range(tries):
        first = counters(daemon.api, cid)
        on_socket = daemon.api.get("/metrics")
        on_tcp = fetch_tcp(topo.client, scrape_url())
        second = counters(daemon.api, cid)
        if totals(first) == totals(second):
            return second, on_socket, on_tcp
        time.sleep(0.5)
    raise HarnessError(f"the counters of {cid} kept moving over {tries} readings")


@pytest.mark.checks(7)
def test_metrics_say_what_stats_say_on_socket_and_tcp(check, daemon, topo, probes):
    """After traffic each way, every counter of each direction in GET /metrics, on the control
    socket and on --metrics-listen's TCP address, is the one GET /v1/stats gives."""
    cid = topo.interface
    daemon.api.must(daemon.api.activate("LC Test Drop"))
    probes.loss([f"up:{topo.s4}", f"down:{topo.s4}"], 50, gap=0.002)
    stats, on_socket, on_tcp = steady_readings(daemon, topo, cid)
    expected = as_metrics(stats)
    check.at_least("the counters moved: uplink dropped, downlink carried",
                   min(stats["uplink"]["droppedByLoss"], stats["downlink"]["packets"]), 50, "packets")
    socket_samples = samples(on_socket.body.decode()) if on_socket.status == 200 else {}
    tcp_samples = samples(on_tcp.body) if on_tcp.status == 200 else {}
    for label, found in (("the control socket", socket_samples), (f"--metrics-listen {METRICS}", tcp_samples)):
        for direction, short in DIRECTIONS:
            wanted = {k: v for k, v in expected.items() if f'direction="{short}"' in k}
            check.equal(f"GET /metrics on {label}: the {direction}'s counters, as GET /v1/stats", wanted,
                        picked(found, wanted))
    check.equal(f"--metrics-listen {METRICS}: the same series as on the socket", sorted(socket_samples),
                sorted(tcp_samples))
    check.equal(f"--metrics-listen {METRICS}: the rest of the API is not there", 404,
                fetch_tcp(topo.client, scrape_url("/v1/status")).status)


@pytest.mark.checks(3)
def test_hostile_requests_to_the_metrics_listener(check, daemon, topo):
    """Hostile bytes to the listener from a user without rights: every answer a 4xx JSON error
    or a scrape, none hung, and it serves on."""
    done = topo.client.run(*as_stranger([SYSTEM_PYTHON, HARNESS / "hostile.py", "--tcp", METRICS, "--count", "900"]),
                           timeout=300)
    try:
        summary = json.loads(done.out)
    except ValueError:
        summary = None
    shown = None if summary is None else (f"{summary.get('failures')} failures {summary.get('examples')}; "
                                          f"{summary.get('requests')} requests, {summary.get('by_status')}")
    check.true("hostile bytes to --metrics-listen: every answer a 4xx JSON error or a scrape, none hung",
               summary is not None and summary.get("failures") == 0 and summary.get("requests", 0) >= 900, shown,
               "0 failures of >= 900 requests")
    check.equal("after them: a scrape is answered", 200, fetch_tcp(topo.client, scrape_url()).status)
    check.equal("after them: the daemon runs", True, daemon.running)


@pytest.mark.timed
@pytest.mark.checks(9)
def test_queue_burst_counted_and_drained_at_the_rate(check, daemon, topo, work, device, probes):
    """A burst of 300 datagrams into LC Test Queue's 4 kbit/s: the bucket's worth passes, the
    queue holds what it can, the rest is dropped by the queue; the queue then drains at the rate
    (GET /v1/stats's bitsPerSecond between two reads 4.5 s apart while it drains). `linkcond
    watch` into a file prints one plain line per update with those drops."""
    cid = topo.interface
    daemon.api.must(daemon.api.activate("LC Test Queue"))
    wait_drained(device)
    before = counters(daemon.api, cid)
    probes.loss([f"up:{topo.s4}"], 300, gap=0.0003, grace=0.1)
    # The queue's drops are counted when the link next takes a packet (every 180 ms at 4 kbit/s).
    time.sleep(0.4)
    first = counters(daemon.api, cid)
    # The full queue takes 32 x 180 ms to drain: the second read comes before it is empty, over a
    # window where one frame more or less is 4% of the rate.
    time.sleep(4.5)
    second = counters(daemon.api, cid)
    dropped = grown(before, first, "uplink", "droppedPackets")
    print(f"counters: before {before}\nafter the burst {first}\n4.5 s later {second}")
    check.between("a full queue's drops", dropped, 235, 260, "packets", promised="300 less the bucket's and the queue's",
                  why="about 18 frames of htb's 1600-byte bucket and 32 queued; a few sent during the burst")
    check.equal("those drops are the queue's, none the loss's (droppedByQueue, droppedByLoss)", [dropped, 0],
                [grown(before, first, "uplink", "droppedByQueue"), grown(before, first, "uplink", "droppedByLoss")])
    check.between("queued just after the burst", first["uplink"].get("queuedPackets"), 1, 32, "packets",
                  promised="up to the queue's 32")
    check.at_least("still queued at the second read (the rate is the drain's)", second["uplink"].get("queuedPackets"), 1,
                   "packets")
    check.relative("the rate while the queue drains, between two reads", second["uplink"].get("bitsPerSecond"), 4000,
                   0.05, "bit/s")
    watch_out = work / "watch.out"
    with watch_out.open("w") as out:
        watch = daemon.client_process("watch", "--interval", "1", "--count", "2", stdout=out, stderr=subprocess.STDOUT)
        rc = watch.wait(30)
    lines = watch_out.read_text().splitlines()
    print("watch:", lines)
    check.equal("watch: exit status", 0, rc)
    check.equal("watch, not on a terminal: one plain line per update for the condition", [True, True],
                [f" {cid} LC Test Queue; down " in line for line in lines])
    wait_drained(device)
    drained = counters(daemon.api, cid)
    shown = re.search(r"; up .*?(\d+) bytes (\d+) dropped", lines[-1]) if lines else None
    shown_drops = int(shown.group(2)) if shown else None
    check.equal("watch: the uplink's drops on its last line, as GET /v1/stats counts them",
                drained["uplink"]["droppedPackets"], shown_drops)
    total = (grown(before, drained, "uplink", "packets") + grown(before, drained, "uplink", "droppedPackets")
             + drained["uplink"]["queuedPackets"])
    check.between("carried, dropped and queued add up to what was sent", total, 300, 300 + OWN, "packets",
                  promised="the 300 sent")


@pytest.mark.checks(7)
def test_run_json_summary_counts_its_command(check, daemon, topo, work, server):
    """`run` says what its command's traffic met when it ends, and writes it with --json-summary:
    100 datagrams up under 100% loss, each dropped by the loss; the condition before it is back."""
    cid = topo.interface
    daemon.api.must(daemon.api.activate("LC Test A"))
    summary_file = work / "run-summary.json"
    summary_file.unlink(missing_ok=True)
    done = daemon.cli("run", "--profile", "LC Test Drop", "--json-summary", summary_file, "--",
                      *topo.client.argv(SYSTEM_PYTHON, PROBE, "loss", "--ctl", server.ctl, "--count", "100",
                                        "--gap", "0.002", "--task", f"up:{topo.s4}"), timeout=120)
    check.exit_status("run: exit status, its command's", done, 0)
    try:
        sent = json.loads(done.out)[0]
        probe = f"{sent['sent']} sent, {sent['received']} received"
    except (ValueError, KeyError, IndexError, TypeError):
        probe = None
    check.equal("run's command: sent 100 up, none arrived", "100 sent, 0 received", probe)
    check.contains("run: one line on stderr when the command ends", done.err, f"LC Test Drop on {cid} for ")
    try:
        summary = json.loads(summary_file.read_text())
    except (OSError, ValueError):
        summary = {}
    check.equal("run --json-summary: the condition, profile, status and how it ended", [cid, "LC Test Drop", 0, "released"],
                [summary.get(k) for k in ("condition", "profile", "exitStatus", "ended")])
    up = summary.get("uplink") or {}
    check.between("run --json-summary: uplink packets dropped by the loss while the command ran",
                  up.get("droppedByLoss"), 100, 100 + OWN, "packets", promised="the 100 it sent")
    check.equal("run --json-summary: none by the queue; all the drops the loss's", [0, up.get("droppedByLoss")],
                [up.get("droppedByQueue"), up.get("droppedPackets")])
    check.equal("run: the condition from before is back", "LC Test A", daemon.api.profile_in_force())


# ---------------------------------------------------------------- a connection flood

#: Connections of one user other than root the daemon admits at once (docs/operations.md),
#: counted by the uid that owns each connecting socket.
PER_USER = 64
#: Descriptors the daemon may hold besides those: the readings' own connections, a refusal on
#: its way out.
FD_SLACK = 16
#: Memory the daemon may take as the flood fills the user's connections: its working size under
#: 1 300 to 2 000 refused connections a second, measured 3.6 to 5.5 MiB on 2026-11-30 (0.9 to
#: 1.4 MiB when the host took half as many), and room for one 2 MiB allocator step.
RSS_FULL_KIB = 8192
#: Memory the daemon may gain after that while the flood goes on, 15 000 refused connections and
#: more: its working size moves with the connections in flight (measured 0.5 to 2.3 MiB, down as
#: well as up); 300 bytes kept per refused connection would not pass it.
RSS_SLACK_KIB = 4096
#: How long a scrape may take to be answered while the flood fills the listener's backlog:
#: Prometheus's default scrape timeout. A connection waits for room in the backlog (SYN cookies,
#: then its request retransmitted at 0.2, 0.4, 0.8, 1.6 s...): 0.4 to 3.7 s measured.
SCRAPE_WITHIN = 10
#: How long root's request on the control socket may take meanwhile.
ROOT_WITHIN = 2


class Flooding:
    """A flood from nobody on the listener, and readings taken while it is on."""

    def __init__(self, daemon, topo, work):
        self.daemon, self.topo = daemon, topo
        self.until = work / "flood-stop"
        self.out = work / "flood.json"
        self.until.unlink(missing_ok=True)
        self.process = start_flood(topo.client, METRICS, self.out, self.until, connections=4000, seconds=120)
        self.began = time.monotonic()
        self.result: dict | None = None

    def wait_full(self) -> None:
        """Until the daemon holds all a user may (its descriptors up by the per-user limit)."""
        base = self.daemon.fd_count()
        wait_until(lambda: (self.daemon.fd_count() or 0) >= base + PER_USER - 4, 20, 0.2)

    def end(self) -> dict:
        self.until.touch()
        self.result = flood_result(self.process, self.out)
        return self.result


@pytest.fixture
def flooding(daemon, topo, work):
    flood = Flooding(daemon, topo, work)
    yield flood
    if flood.result is None:
        flood.end()


def root_status(daemon) -> tuple[int | None, float]:
    began = time.monotonic()
    try:
        status = daemon.api.get("/v1/status", timeout=30).status
    except NoAnswer:
        status = None
    return status, time.monotonic() - began


@pytest.mark.checks(12)
def test_connection_flood_on_the_metrics_listener(check, daemon, topo, flooding):
    """A user without rights opens as many connections to --metrics-listen as it can, replacing
    each one closed: the daemon admits at most its per-user limit and refuses the rest at once
    with a 503, root's control socket answers throughout, every scrape is answered, its
    descriptors and memory stay bounded, and all is as before once the flood ends."""
    fds_before, rss_before = daemon.fd_count(), daemon.rss_kib()
    flooding.wait_full()
    scrapes, roots, fds, rss = [], [], [], []
    for _ in range(10):
        scrapes.append(fetch_tcp(topo.client, scrape_url(), timeout=30))
        roots.append(root_status(daemon))
        fds.append(daemon.fd_count())
        rss.append(daemon.rss_kib())
        time.sleep(0.5)
    still_on = flooding.process.poll() is None
    result = flooding.end()
    print(f"flood: {result}\nscrapes: {[(s.status, s.seconds) for s in scrapes]}\nroot: {roots}\nfds {fds_before} -> {fds}"
          f"\nrss {rss_before} -> {rss}")
    check.true("the flood was on throughout: still running after the last reading, connections opened and open",
               still_on and result["connected"] > 4000 and result["open_at_end"] >= PER_USER,
               {"running": still_on, **{k: result[k] for k in ("seconds", "attempts", "connected", "open_at_end")}},
               f"running, > 4000 connected, >= {PER_USER} open at the end (all a user may hold)")
    check.true("the flood's extra connections refused at once: every answer it got a 503, each closed",
               set(result["by_status"]) == {"503"} and result["answered"] > 1000
               and result["closed_by_server"] + result["reset"] >= result["answered"],
               {k: result[k] for k in ("answered", "by_status", "closed_by_server", "reset")},
               "> 1000 answers, all 503, each closed")
    check.equal("root's GET /v1/status on the control socket meanwhile: answered", [200] * len(roots), [s for s, _ in roots])
    check.at_most("root's GET /v1/status meanwhile: the slowest", max(t for _, t in roots), ROOT_WITHIN, "s")
    check.equal("scrapes meanwhile: each answered (the metrics, or a 503 JSON refusal)", [True] * len(scrapes),
                [s.status == 200 or (s.status == 503 and "too-many-connections" in s.body) for s in scrapes])
    check.at_most("scrapes meanwhile: the slowest answer", max((s.seconds or 1e9) for s in scrapes), SCRAPE_WITHIN, "s")
    check.at_most("descriptors the daemon held during the flood", max(f or 1e9 for f in fds), fds_before + PER_USER + FD_SLACK,
                  "fds", why=f"{fds_before} before, {PER_USER} admitted, {FD_SLACK} others")
    full = rss[0] or 1e12
    check.at_most("memory the daemon took as the flood filled the user's connections", full - rss_before, RSS_FULL_KIB,
                  "KiB", why=f"{rss_before} KiB before")
    check.at_most("memory the daemon gained while the flood went on", max(r or 1e12 for r in rss) - full, RSS_SLACK_KIB,
                  "KiB", why=f"{full} KiB once full")
    check.equal("after the flood: the daemon runs", True, daemon.running)
    check.true("after the flood: its descriptors back to what they were, within 10 s",
               wait_until(lambda: (daemon.fd_count() or 1e9) <= fds_before + 2, 10, 0.2) is not None,
               daemon.fd_count(), f"<= {fds_before + 2}")
    check.equal("after the flood: a scrape gets the metrics", 200, fetch_tcp(topo.client, scrape_url()).status)


@pytest.mark.checks(1)
def test_scrapes_get_the_metrics_during_a_connection_flood(check, daemon, topo, flooding):
    """While a user floods the listener, a scraper (Prometheus: one request, 10 s to answer)
    still gets the metrics: the flood must not blind the machine's monitoring."""
    flooding.wait_full()
    got = []
    for _ in range(5):
        scrape = fetch_tcp(topo.client, scrape_url(), timeout=10)
        got.append(scrape.status if scrape.status != 503 else f"503 {scrape.body.split('message', 1)[-1][:90]!r}")
        time.sleep(1)
    flooding.end()
    check.equal("scrapes during the flood: each gets the metrics (200) within 10 s", [200] * 5, got)
