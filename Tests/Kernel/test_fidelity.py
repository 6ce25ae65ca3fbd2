"""Fidelity: each number a profile promises, measured with real packets on the whole interface.

Delays one way per direction (a direction doubled, swapped or missing cannot pass), DNS's extra
delay, the SSH exemption, rates per direction and family, jitter's distribution, loss per
direction and family, Black Hole. Timed: these run in the timed phase, alone on their CPU.

Tolerances (docs/testing.md says why each holds): a one-way delay within ±(1 ms + 1%) of the
profile's, against the unshaped one measured in the same phase; a rate within ±5%; a count of
datagrams delivered inside its 99% binomial interval (measured once more when outside, so that a
correct link fails with probability 10^-4).
"""

from __future__ import annotations

import pytest

from harness.checks import binomial_interval, minus
from harness.oneway import delay_tolerance, oneway_checks
from harness.probes import tcp_target, udp_target
from harness.tc import qdisc, wait_drained
from harness.topology import families

CHECKS = 86

pytestmark = pytest.mark.timed


@pytest.mark.checks(8)
def test_slow_net_delays_each_direction(check, daemon, topo, probes, unshaped_oneway):
    """Slow Net adds 100 ms one way in each direction, IPv4 and IPv6."""
    daemon.api.must(daemon.api.activate("Slow Net"))
    oneway_checks(check, probes, "Slow Net", topo.s4, topo.s6, unshaped_oneway, 100, 100, rate=10, duration=4)


@pytest.mark.checks(8)
def test_asymmetric_delays_each_direction(check, daemon, topo, probes, unshaped_oneway):
    """LC Test A's 40 ms up and 60 ms down, each where it belongs, IPv4 and IPv6."""
    daemon.api.must(daemon.api.activate("LC Test A"))
    oneway_checks(check, probes, "LC Test A", topo.s4, topo.s6, unshaped_oneway, 40, 60)


@pytest.mark.checks(14)
def test_slow_net_dns_delay_and_ssh_exemption(check, daemon, topo, probes, unshaped_rtt):
    """DNS queries (port 53, UDP and TCP) take 200 ms more than Slow Net's 100 ms each way;
    TCP port 22 is not shaped at all."""
    targets = {}
    for family, host in families(topo.s4, topo.s6):
        targets[family] = {"udp/53": udp_target(host, 53), "tcp/53": tcp_target(host, 53, "tcpconnect"),
                           "tcp/22": tcp_target(host, 22)}
    everything = [t for per in targets.values() for t in per.values()]
    base = probes.rtt(everything, rounds=10, interval=0.05, timeout=1)
    daemon.api.must(daemon.api.activate("Slow Net"))
    shaped = probes.rtt(everything, rounds=10, interval=0.3, timeout=2)
    for family, per in targets.items():
        for kind in ("udp/53", "tcp/53"):
            t = per[kind]
            check.equal(f"Slow Net DNS {kind} {family}: every query answered", 10, shaped[t].received)
            check.near(f"Slow Net DNS {kind} {family}: added round trip", minus(shaped[t].min_ms, base[t].min_ms),
                       400, delay_tolerance(400), why="100 up + 200 DNS + 100 down")
        t = per["tcp/22"]
        check.equal(f"Slow Net TCP/22 {family}: every connection and echo answered", 10, shaped[t].received)
        check.near(f"Slow Net TCP/22 {family}: connect, against unshaped", minus(shaped[t].min_ms, base[t].min_ms), 0, 2,
                   why="exempt: unshaped within 2 ms")
        check.near(f"Slow Net TCP/22 {family}: echo, against unshaped",
                   minus(shaped[t].echo_median_ms, base[t].echo_median_ms), 0, 2, why="exempt: unshaped within 2 ms")


@pytest.mark.checks(2)
@pytest.mark.parametrize("direction", ["up", "down"])
def test_slow_net_rate_tcp(check, daemon, topo, probes, device, direction):
    """Slow Net carries 32 kbit/s each way: a TCP transfer's rate on the link at the receiver."""
    daemon.api.must(daemon.api.activate("Slow Net"))
    wait_drained(device)
    measured = probes.throughput(direction, topo.s4, duration=17, skip=3)
    check.relative(f"Slow Net TCP rate {direction}", measured["link_bps"], 32000, 0.05, "bit/s",
                   why=f"{measured['window_bytes']} bytes over {measured['window_s']} s")
    check.at_least(f"Slow Net TCP {direction}: bytes measured", measured["window_bytes"], 40000, "bytes")


@pytest.mark.checks(8)
def test_asymmetric_rates_each_direction_and_family(check, daemon, topo, probes, device):
    """LC Test Rate's 2 Mbit/s down and 500 kbit/s up, each direction at once, IPv4 and IPv6:
    full-size UDP frames offered at 1.3 times the rate keep the shaper's queue full, so that
    what arrives is the shaped rate."""
    daemon.api.must(daemon.api.activate("LC Test Rate"))
    for family, host in families(topo.s4, topo.s6):
        wait_drained(device)
        up = probes.udprate("up", host, bps=500_000, offer=1.3, duration=6, skip=1.5)
        wait_drained(device)
        down = probes.udprate("down", host, bps=2_000_000, offer=1.3, duration=6, skip=1.5)
        for direction, measured, rate in (("up", up, 500_000), ("down", down, 2_000_000)):
            check.relative(f"LC Test Rate {family} {direction}", measured["link_bps"], rate, 0.05, "bit/s",
                           why=f"{measured['window_frames']} frames over {measured['window_s']} s")
            check.at_least(f"LC Test Rate {family} {direction}: frames measured", measured["window_frames"],
                           rate * 4 / 8 / 1514 * 0.9, "frames")


@pytest.mark.checks(9)
@pytest.mark.parametrize("direction,delay,jitter", [("up", 50, 20), ("down", 30, 10)])
def test_jitter_distribution(check, daemon, topo, probes, unshaped_oneway, direction, delay, jitter):
    """LC Test Jitter: each packet's delay uniform within delay ± jitter. The mean against the
    delay; the shortest against the lower end (of 600 uniform delays, the least falls within
    0.1 ms of it but with probability e^-30 beyond 2 ms; nothing outside linkcond makes a packet
    early); the 99th percentile, the quartiles and their range against the uniform
    distribution's. Not the longest: one packet the VM's host held up a few milliseconds would
    decide it, while a wider or longer-tailed jitter moves the 99th percentile beyond its
    tolerance (0.5 ms + 4 standard errors, under 1 ms)."""
    daemon.api.must(daemon.api.activate("LC Test Jitter"))
    measured = probes.oneway(topo.s4, direction=direction, rate=100, duration=6)[direction]
    n = measured["received"]
    base = unshaped_oneway["IPv4", direction]
    check.equal(f"jitter {direction}: every packet arrived", measured["sent"], n)
    check.at_least(f"jitter {direction}: packets measured", n, 550, "packets")
    # The mean of N uniform delays strays by 2J / sqrt(12 N) (one standard error).
    mean_error = 2 * jitter / (12 * max(n, 1)) ** 0.5
    check.near(f"jitter {direction}: mean delay", minus(measured.get("mean_ms"), base), delay,
               0.5 + 3 * mean_error, why="0.5 ms + 3 standard errors of the mean")
    check.between(f"jitter {direction}: shortest delay", minus(measured.get("min_ms"), base),
                  delay - jitter - 0.5, delay - jitter + 2, "ms", promised=f"{delay - jitter} ms")
    quantiles = measured.get("quantiles_ms", {})
    for q in (0.25, 0.5, 0.75, 0.99):
        expected = delay - jitter + 2 * jitter * q
        # The sampling error of a quantile of N uniform values: 2J sqrt(q(1-q)/N).
        standard_error = 2 * jitter * (q * (1 - q) / max(n, 1)) ** 0.5
        check.near(f"jitter {direction}: quantile {q}", minus(quantiles.get(str(q)), base), expected,
                   0.5 + 4 * standard_error, why="0.5 ms + 4 standard errors of the quantile")
    check.near(f"jitter {direction}: interquartile range", minus(quantiles.get("0.75"), quantiles.get("0.25")),
               jitter, 0.15 * jitter, why="uniform: half the width, the jitter; ±15%")


@pytest.mark.checks(8)
def test_loss_each_direction_and_family(check, daemon, topo, probes):
    """Nasty Net's 90% loss, and LC Test Loss's 20% up and 40% down: the datagrams delivered of
    2000 each way and family, inside the 99% binomial interval."""
    for profile, up, down in (("Nasty Net", 0.9, 0.9), ("LC Test Loss", 0.2, 0.4)):
        daemon.api.must(daemon.api.activate(profile))
        for family, host in families(topo.s4, topo.s6):
            for direction, loss in (("up", up), ("down", down)):
                low, high = binomial_interval(2000, 1 - loss, 2.576)
                counts = []
                for _ in range(2):
                    task = f"{direction}:{host}"
                    counts.append(probes.loss([task], 2000)[task])
                    if low <= counts[-1] <= high:
                        break
                check.between(f"{profile} {family} {direction}: delivered of 2000", counts[-1], low, high, "datagrams",
                              promised=f"{(1 - loss) * 2000:.0f} ({loss:.0%} loss)",
                              why=f"99% binomial interval; counts {counts}")


@pytest.mark.checks(18)
def test_black_hole(check, daemon, topo, probes, server, device, unshaped_rtt):
    """Black Hole: every request leaves, nothing comes back, and the silence is linkcond's (the
    server answered each request, the IFB's netem dropped each answer); SSH, ARP and IPv6
    neighbour discovery keep working."""
    daemon.api.must(daemon.api.activate("Black Hole"))
    for family, host in families(topo.s4, topo.s6):
        up = f"up:{host}"
        check.between(f"Black Hole {family}: uplink delivered of 1000", probes.loss([up], 1000)[up], 1000, 1000,
                      promised="all (the uplink is unaffected)")
        dropped_before = qdisc(device, "7a10:", topo.ifb)["drops"]
        down = f"down:{host}"
        check.equal(f"Black Hole {family}: downlink delivered of 1000", 0, probes.loss([down], 1000)[down])
        check.at_least(f"Black Hole {family}: the IFB's netem dropped them",
                       qdisc(device, "7a10:", topo.ifb)["drops"] - dropped_before, 1000, "packets")
        echoed_before = server.echoed().get("udp/7", 0)
        target = udp_target(host)
        replies = probes.rtt([target], rounds=5, interval=0.1, timeout=0.5)[target].received
        check.equal(f"Black Hole {family}: UDP echo replies", 0, replies)
        check.equal(f"Black Hole {family}: the server answered each", 5, server.echoed().get("udp/7", 0) - echoed_before)
        ssh = tcp_target(host)
        shaped = probes.rtt([ssh], rounds=5, interval=0.1, timeout=2)[ssh]
        check.equal(f"Black Hole {family}: TCP/22 connects and echoes", 5, shaped.received)
        check.near(f"Black Hole {family}: TCP/22 connect, against unshaped", minus(shaped.min_ms, unshaped_rtt[family]),
                   0, 2, why="exempt: unshaped within 2 ms")
    # Neighbours forgotten, then found again through the condition: ARP and ND are never shaped.
    topo.client.ip("neigh", "flush", "all")
    topo.server.ip("neigh", "flush", "all")
    for family, host in families(topo.s4, topo.s6):
        ssh = tcp_target(host)
        check.equal(f"Black Hole {family}: TCP/22 after the neighbours were flushed ({'ND' if family == 'IPv6' else 'ARP'})",
                    1, probes.rtt([ssh], rounds=1, timeout=3)[ssh].received)
    check.equal("Black Hole: the probe server still runs", True, server.alive())
    check.equal("Black Hole: status", "Black Hole", daemon.api.profile_in_force())
