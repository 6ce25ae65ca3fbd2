#!/usr/bin/env python3
"""Reads what `probe.py stream --dir down` recorded while a scenario alternated between two
downlink delays, and says when each step began and whether any packet saw less than its step.

Both namespaces share the VM's CLOCK_MONOTONIC, so a packet's receive time minus its send time
is its one-way delay; netem fixes a packet's delay when the packet enters it, so the delay tells
which step was in force when it was sent. Prints one JSON object.

  scenario_check.py steps STREAM.json --low MS --high MS --step-ms MS
"""
import argparse
import json
import statistics
import sys


def steps(a):
    with open(a.stream) as f:
        down = json.load(f)["down"]
    packets = sorted(down["packets"], key=lambda p: p[1])
    middle = (a.low + a.high) / 2
    # (send time in ms, one-way delay in ms), in the order sent; the unshaped ones sent before
    # the scenario began are left out.
    samples = [(sent / 1e6, (received - sent) / 1e6) for _, sent, received in packets]
    # Packets sent before the play request was made (`--after-ms`, the same clock) are left out;
    # those after it are unshaped until the first step is in force, which begins with `a.run`
    # packets in a row at the low step's delay or more: one alone may have waited for its
    # neighbour's address. Arrival times are the kernel's, so a packet the busy receiver read
    # late cannot look shaped.
    first = next((i for i, (sent, _) in enumerate(samples) if sent >= a.after_ms), len(samples))
    samples = samples[first:]
    shaped = [delay >= a.low - a.tolerance_below for _, delay in samples]
    unshaped = next((i for i in range(len(samples)) if all(shaped[i:i + a.run]) and i + a.run <= len(samples)), len(samples))
    samples = samples[unshaped:]
    classes = ["high" if delay > middle else "low" for _, delay in samples]
    # A step is a run of at least `a.run` packets of one class: a shorter one is a packet held up
    # on its way (a busy VM's receiver), not a step, and joins the run around it.
    runs = []
    for i, kind in enumerate(classes):
        if runs and runs[-1][0] == kind:
            runs[-1][2] += 1
        else:
            runs.append([kind, i, 1])
    steady = [run for run in runs if run[2] >= a.run]
    # Each packet's own step: its run's, or for a held-up packet the step it was sent under.
    own = []
    current = steady[0][0] if steady else "low"
    for kind, _, length in runs:
        if length >= a.run:
            current = kind
        own += [current] * length
    starts, kinds = [], []
    for kind, index, _ in steady:
        if not kinds or kinds[-1] != kind:
            starts.append(samples[index][0])
            kinds.append(kind)
    # A step's start is known to within one packet interval: the first packet sent under it.
    # The daemon plans each step from the first one's start, whole steps apart; a step begun late
    # does not move the ones after it.
    offsets = [round(t - starts[0] - k * a.step_ms, 1) for k, t in enumerate(starts) if k >= 1]
    # A packet below its own step's delay would mean the change was not hitless; one between
    # the two delays, that some packet met neither step's values.
    below = sum(1 for (_, delay), kind in zip(samples, own) if delay < (a.low if kind == "low" else a.high) - a.tolerance_below)
    between = sum(1 for _, delay in samples if a.low + a.tolerance_above < delay < a.high - a.tolerance_below)
    interval = statistics.median([samples[i][0] - samples[i - 1][0] for i in range(1, len(samples))]) if len(samples) > 1 else None
    out = {
        "sent": down.get("sent", 0),
        "received": len(samples) + unshaped + first,
        "unshaped": unshaped,
        "judged": len(samples),
        "before_play": first,
        "held_up": sum(run[2] for run in runs if run[2] < a.run),
        "changes": len(starts) - 1,
        "kinds": kinds,
        "offsets_ms": offsets,
        "max_abs_offset_ms": max((abs(o) for o in offsets), default=None),
        "median_abs_offset_ms": round(statistics.median([abs(o) for o in offsets]), 1) if offsets else None,
        "packet_interval_ms": round(interval, 2) if interval is not None else None,
        "below_own_step": below,
        "between_steps": between,
        "min_delay_ms": round(min((d for _, d in samples), default=0), 3),
        "low_median_ms": round(statistics.median([d for (_, d), k in zip(samples, classes) if k == "low"] or [0]), 3),
        "high_median_ms": round(statistics.median([d for (_, d), k in zip(samples, classes) if k == "high"] or [0]), 3),
    }
    json.dump(out, sys.stdout)
    print()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("steps")
    sp.add_argument("stream")
    sp.add_argument("--low", type=float, required=True, help="the lower step's downlink delay, ms")
    sp.add_argument("--high", type=float, required=True, help="the higher step's downlink delay, ms")
    sp.add_argument("--step-ms", type=float, required=True, help="each step's duration, ms")
    sp.add_argument("--tolerance-below", type=float, default=0.5, help="ms a delay may fall short of its step's (clock reads)")
    sp.add_argument("--tolerance-above", type=float, default=15.0, help="ms a delay may exceed the low step's (scheduling)")
    sp.add_argument("--run", type=int, default=3, help="packets in a row that make a step")
    sp.add_argument("--after-ms", type=float, default=0, help="CLOCK_MONOTONIC ms when the play request was made")
    a = parser.parse_args()
    {"steps": steps}[a.cmd](a)


if __name__ == "__main__":
    main()
