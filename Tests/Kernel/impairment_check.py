#!/usr/bin/env python3
"""Turns what `probe.py stream --dir down` recorded into the figures the impairment checks
compare with a profile: losses and their bursts, duplicates, corrupted packets, packets that
skipped the delay, arrival inversions and one-way delay quantiles. Prints one JSON object.

  impairment_check.py stream STREAM.json [--fast-below MS]
  impairment_check.py quantiles --distribution normal|pareto|paretonormal|uniform --delay MS --jitter MS
"""
import argparse
import json
import math
import statistics
import sys

QUANTILES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def quantile(values, q):
    pos = q * (len(values) - 1)
    low = int(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


def stream(a):
    with open(a.stream) as f:
        down = json.load(f)["down"]
    sent = down.get("sent", 0)
    packets = down["packets"]
    seen = {}
    for seq, sent_ns, received_ns in packets:
        seen.setdefault(seq, []).append((received_ns - sent_ns) / 1e6)
    duplicates = sum(len(v) - 1 for v in seen.values())
    # Losses and their bursts: runs of sequence numbers that never arrived, among those sent.
    lost_runs = []
    run = 0
    for seq in range(sent):
        if seq in seen:
            if run:
                lost_runs.append(run)
            run = 0
        else:
            run += 1
    if run:
        lost_runs.append(run)
    delays = sorted(d for v in seen.values() for d in v[:1])
    # The order the socket gave them, the application's: two packets stamped on two CPUs may
    # carry stamps a few microseconds out of that order.
    arrival = [seq for seq, _, _ in packets]
    inversions = sum(1 for i in range(1, len(arrival)) if arrival[i] < arrival[i - 1])
    out = {
        "sent": sent,
        "received": len(seen),
        "lost": sum(lost_runs),
        "loss_bursts": len(lost_runs),
        "mean_burst": round(statistics.fmean(lost_runs), 3) if lost_runs else None,
        "duplicates": duplicates,
        "corrupted": down.get("corrupted", 0),
        # Where lost packets went: sends the kernel refused, and the longest run the sender
        # sent back to back after being held up (a burst the emulated VM may drop on its way).
        "send_refused": down.get("send_refused"),
        "longest_burst": down.get("longest_burst"),
        "inversions": inversions,
        "fast": sum(1 for d in delays if d < a.fast_below) if a.fast_below is not None else None,
        "quantiles_ms": {str(q): round(quantile(delays, q), 3) for q in QUANTILES} if delays else {},
    }
    json.dump(out, sys.stdout)
    print()


def normal_quantile(p):
    low, high = -10.0, 10.0
    for _ in range(60):
        middle = (low + high) / 2
        if 0.5 * (1 + math.erf(middle / math.sqrt(2))) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def pareto_value(p):
    return ((1 - p) ** (-1 / 3) - 1.5) * 4 / 3


def quantiles(a):
    """The delay quantiles a jitter distribution promises: netem draws a table value at random,
    so the delay's quantile q is delay + jitter x the table's quantile q (clamped like it)."""
    shape = {
        "uniform": lambda p: -1 + 2 * p,
        "normal": normal_quantile,
        "pareto": pareto_value,
        "paretonormal": lambda p: (normal_quantile(p) + 3 * pareto_value(p)) / 4,
    }[a.distribution]
    clamp = 32767 / 8192
    out = {str(q): round(a.delay + a.jitter * max(min(shape(q), clamp), -4.0), 3) for q in QUANTILES}
    json.dump(out, sys.stdout)
    print()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("stream")
    sp.add_argument("stream")
    sp.add_argument("--fast-below", type=float, default=None, help="count packets whose one-way delay is below this, ms")
    sp = sub.add_parser("quantiles")
    sp.add_argument("--distribution", required=True)
    sp.add_argument("--delay", type=float, required=True)
    sp.add_argument("--jitter", type=float, required=True)
    a = parser.parse_args()
    {"stream": stream, "quantiles": quantiles}[a.cmd](a)


if __name__ == "__main__":
    main()
