#!/usr/bin/env python3
"""Turns the results of Benchmarks/run.sh (and the host's `linkcond-bench native`) into the
tables of docs/performance.md and the plots beside it.

usage: report.py RESULTS_DIR [PLOTS_DIR]   (prints Markdown on stdout; plots to docs/performance unless named)

Exits 1 when any row with a target misses it, or when a part's results are missing: a missing
measurement is a failure, not a pass.
"""

import json
import math
import os
import statistics
import sys
from bisect import bisect_right

Z99 = 2.576
# The fastest shaped rate of the grid: an unshaped direction must carry at least this much.
UNSHAPED_FLOOR_BPS = 500e6


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return ("%." + str(digits) + "f") % x


def memory(kib):
    """`13.0 MiB (13.6 MB)`: binary units as ps and top count, decimal as the target is set."""
    return "%.1f MiB (%.1f MB)" % (kib / 1024, kib * 1.024 / 1000)


def parse_ms(text):
    """'100ms', '1.5s', '250us', '0ms' -> milliseconds."""
    for suffix, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


# ------------------------------------------------------------------ latency

def latency(results):
    rows = []
    methods = []
    for name, label in (("latency-linkcond.json", "linkcond"), ("latency-linkcond-10k.json", "linkcond (10 000 switches)"),
                        ("latency-tc.json", "tc script"), ("latency-tcconfig.json", "tcconfig")):
        data = load(os.path.join(results, name))
        if data:
            methods.append((label, data))
    base = dict(methods).get("linkcond")
    out = ["| method | switches | failed | p50 ms | p90 ms | p99 ms | max ms | p50 ratio to linkcond |", "|---|---|---|---|---|---|---|---|"]
    for label, d in methods:
        ratio = d["p50Milliseconds"] / base["p50Milliseconds"] if base and not label.startswith("linkcond") else None
        out.append("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
            label, d["count"], d.get("failures", 0), fmt(d["p50Milliseconds"]), fmt(d["p90Milliseconds"]), fmt(d["p99Milliseconds"]),
            fmt(d["maxMilliseconds"]), ("%.0f×" % ratio) if ratio else "1×" if label == "linkcond" else ""))
    return "\n".join(out), methods


def native(results):
    d = load(os.path.join(results, "native.json"))
    if not d:
        return "(no native measurement)", None
    u, n = d["userspace"], d["netlinkChange"]
    lines = ["| part | count | p50 ms | p99 ms |", "|---|---|---|---|",
             "| %s | %d | %s | %s |" % (u["method"], u["count"], fmt(u["p50Milliseconds"]), fmt(u["p99Milliseconds"])),
             "| %s | %d | %s | %s |" % (n["method"], n["count"], fmt(n["p50Milliseconds"], 4), fmt(n["p99Milliseconds"], 4)),
             "| **estimated switch** (user space + %.1f netlink changes) | | **%s** | **%s** |" % (
                 d["stepsPerSwitch"], fmt(d["estimatedSwitchP50Milliseconds"]), fmt(d["estimatedSwitchP99Milliseconds"]))]
    return "\n".join(lines), d


# ------------------------------------------------------------------ hitless

def hitless(results):
    stream = load(os.path.join(results, "hitless-stream.json"), {})
    switches = load(os.path.join(results, "hitless-switches.json"), [])
    profiles = load(os.path.join(results, "profiles.json"), [])
    tcp = load(os.path.join(results, "hitless-tcp.json"), {})
    if not stream or not switches:
        return "(no hitless run)", {}
    by_name = {p["name"]: p for p in profiles}
    # The switch log names profiles by file stem.
    by_name.update({os.path.basename(p["file"])[: -len(".yaml")]: p for p in profiles if p.get("file", "").endswith(".yaml")})

    def conditions(name, direction):
        if name == "off" or name not in by_name:
            return 0.0, 0.0
        side = by_name[name]["uplink" if direction == "up" else "downlink"]
        # netem's jitter spreads delays both ways around the configured delay.
        lowest = max(0.0, parse_ms(side["delay"]) - parse_ms(side.get("jitter") or "0ms"))
        return lowest, float(side["loss"].rstrip("%")) / 100.0

    starts = [s["startNanoseconds"] for s in switches]
    rows = ["| direction | packets sent | in a switch | unshaped (below the lower bound) | lost | loss the profiles explain (99% bound) | lost beyond |",
            "|---|---|---|---|---|---|---|"]
    summary = {}
    for direction in ("up", "down"):
        data = stream.get(direction)
        if not data:
            continue
        received = {seq: (sent, got) for seq, sent, got in data["packets"]}
        # The sender's own timestamps of lost packets are unknown; place them by sequence at the
        # stream's rate between received neighbours.
        times = sorted((seq, sent) for seq, (sent, _) in received.items())
        unshaped = 0
        in_switch = 0
        expected = variance = 0.0
        lost = 0
        first_switch = switches[0]["startNanoseconds"]
        t_of = {}
        for i in range(len(times) - 1):
            (s0, t0), (s1, t1) = times[i], times[i + 1]
            for s in range(s0, s1):
                t_of[s] = t0 + (t1 - t0) * (s - s0) // (s1 - s0)
        if times:
            t_of[times[-1][0]] = times[-1][1]
        for seq in range(data["sent"]):
            t = t_of.get(seq)
            if t is None or t < first_switch:
                continue
            i = bisect_right(starts, t) - 1
            current = switches[i]
            previous = switches[i - 1]["profile"] if i > 0 else "off"
            during = t < current["endNanoseconds"]
            names = [previous, current["profile"]] if during else [current["profile"]]
            in_switch += during
            bounds = [conditions(n, direction) for n in names]
            bound_delay = min(b[0] for b in bounds)
            p = max(b[1] for b in bounds)
            if seq in received:
                sent, got = received[seq]
                if (got - sent) / 1e6 < bound_delay - 0.5:
                    unshaped += 1
            else:
                lost += 1
            expected += p
            variance += p * (1 - p)
        upper = expected + Z99 * math.sqrt(variance)
        beyond = max(0, math.ceil(lost - upper))
        rows.append("| %s | %d | %d | **%d** | %d | %.0f (%.0f) | **%d** |" % (
            direction, data["sent"], in_switch, unshaped, lost, expected, upper, beyond))
        summary[direction] = {"sent": data["sent"], "unshaped": unshaped, "lost": lost, "expected": expected, "upper": upper, "beyond": beyond,
                              "ok": data["sent"] > 0 and in_switch > 0 and unshaped == 0 and beyond == 0}
    tcp_line = "TCP transfer across all %d switches: sent %s bytes, received %s, %s." % (
        len(switches), tcp.get("sent"), tcp.get("received"),
        "connection intact" if not tcp.get("error") and tcp.get("received") == tcp.get("sent") else "BROKEN: %s" % tcp.get("error"))
    summary["tcp"] = tcp
    summary["tcp_ok"] = bool(tcp) and not tcp.get("error") and tcp.get("received") == tcp.get("sent") and (tcp.get("sent") or 0) > 0
    return "\n".join(rows) + "\n\n" + tcp_line, summary


# ------------------------------------------------------------------ a scenario played

# A change of one-way delay that is a step's and not noise (the kernel suite's scenario check).
STEP_CHANGE_MS = 15.0
# What a one-way delay may fall short of its step's delay (clock reads, timer slack).
BELOW_MS = 0.5
# Delivered bytes are counted in windows this long; a step's medians leave out this much at
# each of its ends.
WINDOW_S = 0.25
MARGIN_S = 0.5
# A run of lost stream packets at least this share of an outage step's length is that outage.
OUTAGE_SHARE = 0.5
# Stream packets in a row at or above step 1's delay that say step 1 has begun.
RUN_TO_START = 10
# A stream packet on the link: Ethernet, IPv4 and UDP headers, probe.py's 24-byte stamp and its
# 32 bytes of padding.
STREAM_FRAME_BYTES = 14 + 20 + 8 + 24 + 32


def timeline_schedule(steps):
    """Each step's start and end (s from step 1's start), downlink rate (bit/s; None when
    unshaped), delay (ms) and whether it is an outage (100% loss down)."""
    out, t = [], 0.0
    for step in steps:
        down = step.get("downlink") or {}
        out.append({"label": step["label"], "start": t, "end": t + step["seconds"], "bps": down.get("bandwidthBitsPerSecond"),
                    "delay": float(down.get("delayMilliseconds") or 0), "outage": (down.get("lossPercent") or 0) >= 100})
        t += step["seconds"]
    return out


def stream_packets(down):
    """The received packets as {seq: (sent s, one-way delay ms)}, every sequence number's send
    time (a lost packet's placed by sequence between its received neighbours), the packet
    interval (s), and the runs of lost packets as (first, last) sequence numbers."""
    received = {seq: (sent / 1e9, (got - sent) / 1e6) for seq, sent, got in down["packets"]}
    known = sorted((seq, t) for seq, (t, _) in received.items())
    if len(known) < 2:
        return received, {}, None, []
    interval = (known[-1][1] - known[0][1]) / (known[-1][0] - known[0][0])
    seqs = [seq for seq, _ in known]
    t_of = {}
    for seq in range(max(down.get("sent") or 0, known[-1][0] + 1)):
        i = bisect_right(seqs, seq) - 1
        if 0 <= i < len(seqs) and seqs[i] == seq:
            t_of[seq] = known[i][1]
        elif i < 0:
            t_of[seq] = known[0][1] - (known[0][0] - seq) * interval
        elif i + 1 >= len(seqs):
            t_of[seq] = known[-1][1] + (seq - known[-1][0]) * interval
        else:
            (s0, t0), (s1, t1) = known[i], known[i + 1]
            t_of[seq] = t0 + (t1 - t0) * (seq - s0) / (s1 - s0)
    runs, first = [], None
    for seq in range(len(t_of)):
        if seq not in received and first is None:
            first = seq
        elif seq in received and first is not None:
            runs.append((first, seq - 1))
            first = None
    if first is not None:
        runs.append((first, len(t_of) - 1))
    return received, t_of, interval, runs


def first_delay_change(schedule, ordered):
    """The kernel suite's way (scenario_check.py): step 1 begins with the first packet at or above
    its delay, step 2 with the next packet whose delay differs from step 1's by more than
    STEP_CHANGE_MS. Returns step 2's send time (s), or None."""
    d1 = schedule[0]["delay"]
    i = next((i for i, (_, d) in enumerate(ordered) if d >= d1 - BELOW_MS), None)
    if i is None:
        return None
    return next((t for t, d in ordered[i + 1:] if abs(d - d1) > STEP_CHANGE_MS), None)


def step1_from_off(schedule, ordered):
    """Step 1's start (s), when the stream began before the scenario: the first of RUN_TO_START
    packets in a row at or above step 1's delay, after the unshaped ones. A queue only adds to a
    packet's delay, so no wait in it can make this early; or None."""
    d1 = schedule[0]["delay"]
    if schedule[0]["outage"] or d1 <= BELOW_MS or not ordered or ordered[0][1] >= d1 - BELOW_MS:
        return None
    run = 0
    for i, (_, d) in enumerate(ordered):
        run = run + 1 if d >= d1 - BELOW_MS else 0
        if run == RUN_TO_START:
            return ordered[i - RUN_TO_START + 1][0]
    return None


def align_timeline(schedule, received, interval, runs, ordered):
    """Step 1's start on the packets' clock (s), how it was found, and the index of the step
    whose start it was found by. Neither way that comes first is misled by a queue's wait: the
    unshaped packets before the scenario against step 1's, or else the end of an outage step (the
    queue it leaves is empty, so the first packet after its run of losses was sent at the next
    step's start). The kernel suite's way, the first change of delay (first_delay_change), only
    when neither can be had."""
    t1 = step1_from_off(schedule, ordered)
    if t1 is not None:
        return (t1, "the start of step 1: the first of %d stream packets in a row at or above its delay, after the unshaped ones "
                "before it" % RUN_TO_START, 0)
    for k, step in enumerate(schedule[:-1]):
        if not step["outage"] or interval is None:
            continue
        long_runs = [r for r in runs if (r[1] - r[0] + 1) * interval >= OUTAGE_SHARE * (step["end"] - step["start"])]
        long_runs = [r for r in long_runs if r[1] + 1 in received]
        if long_runs:
            first, last = max(long_runs, key=lambda r: r[1] - r[0])
            return (received[last + 1][0] - schedule[k + 1]["start"],
                    "the end of the outage: step %d began with the first stream packet after %d lost in a row" % (k + 2, last - first + 1), k + 1)
    t2 = first_delay_change(schedule, ordered) if len(schedule) > 1 else None
    if t2 is None:
        return None, "no step change found in the one-way delays", None
    return (t2 - schedule[1]["start"],
            "the first change of one-way delay: step 2 began with the first packet %.0f ms off step 1's delay" % STEP_CHANGE_MS, 1)


def measured_start(schedule, k, t0, received, t_of, runs, ordered):
    """When step k began, by the stream packets near its scheduled start (s), or None when they
    cannot tell: the first packet only the new step explains. Into an outage, the first of the
    outage's lost packets; out of one, the first received after them; to a lower delay, the first
    packet below the old step's delay; to a higher one, the packet after the last below the new
    step's delay. A queue's wait on top of the step's delay can hide a change (None); a full
    queue's drops just before an outage count with it (early)."""
    new, old = schedule[k], (schedule[k - 1] if k > 0 else None)
    sched = t0 + new["start"]
    half = min(0.5, (new["end"] - new["start"]) / 2, (old["end"] - old["start"]) / 2 if old else 0.5)
    lo, hi = sched - half, sched + half
    if new["outage"] or (old and old["outage"]):
        if new["outage"]:
            near = [r for r in runs if lo <= t_of[r[0]] <= hi]
            return t_of[max(near, key=lambda r: r[1] - r[0])[0]] if near else None
        near = [r for r in runs if r[1] + 1 in received and lo <= received[r[1] + 1][0] <= hi]
        return received[max(near, key=lambda r: r[1] - r[0])[1] + 1][0] if near else None
    window = [(t, d) for t, d in ordered if lo <= t <= hi]
    d_old, d_new = (old["delay"] if old else 0.0), new["delay"]
    if d_new < d_old:
        return next((t for t, d in window if d < d_old - BELOW_MS), None)
    if d_new > d_old:
        fast = [i for i, (_, d) in enumerate(window) if d < d_new - BELOW_MS]
        return window[fast[-1] + 1][0] if fast and fast[-1] + 1 < len(window) else None
    return None


def delivered(download):
    """The download's series on the monotonic clock: ([times s], [payload bytes so far]), and the
    factor from payload to link bytes."""
    result = (download or {}).get("result") or {}
    start = result.get("startMonotonicNs")
    if start is None or not result.get("series"):
        return [], [], 1.0
    times = [start / 1e9 + t for t, _ in result["series"]]
    return times, [b for _, b in result["series"]], result.get("frame_bytes", 1514) / result.get("payload_bytes", 1448)


def window_rates(times, counts, scale, t0):
    """Link Mbit/s in WINDOW_S windows with edges at t0 + n * WINDOW_S: [(window start s, Mbit/s)]."""
    if not times:
        return []

    def so_far(t):
        i = bisect_right(times, t) - 1
        return counts[i] if i >= 0 else 0

    n = math.floor((times[0] - t0) / WINDOW_S)
    out = []
    while t0 + n * WINDOW_S < times[-1]:
        a = t0 + n * WINDOW_S
        out.append((a, (so_far(a + WINDOW_S) - so_far(a)) * 8 / WINDOW_S * scale / 1e6))
        n += 1
    return out


def scenario(results, plots_dir):
    """A timed scenario played under a TCP download and a UDP stream (scenario.json): per step its
    schedule, what was measured in its middle and when it began; and the timeline plot."""
    doc = load(os.path.join(results, "scenario.json"))
    if not doc:
        return "(not measured)", None
    stream = ((doc.get("stream") or {}).get("result") or {}).get("down")
    if not stream or not stream.get("packets") or not doc.get("steps"):
        return "(no stream packets: stream exit status %s)" % (doc.get("stream") or {}).get("exitStatus"), None
    schedule = timeline_schedule(doc["steps"])
    received, t_of, interval, runs = stream_packets(stream)
    ordered = sorted(received.values())
    t0, method, anchor = align_timeline(schedule, received, interval, runs, ordered)
    if t0 is None:
        return "(%s)" % method, None
    times, counts, scale = delivered(doc.get("download"))
    windows = window_rates(times, counts, scale, t0)

    rows = ["| step | scheduled rate | scheduled delay | TCP on the link, median Mbit/s | one-way delay, median ms | stream packets lost | began vs schedule |",
            "|---|---|---|---|---|---|---|"]
    for k, step in enumerate(schedule):
        a, b = t0 + step["start"], t0 + step["end"]
        rates = [r for w, r in windows if a + MARGIN_S - 1e-9 <= w and w + WINDOW_S <= b - MARGIN_S + 1e-9]
        delays = [d for t, d in ordered if a + MARGIN_S <= t <= b - MARGIN_S]
        in_step = [seq for seq, t in t_of.items() if a <= t < b]
        lost = sum(1 for seq in in_step if seq not in received)
        began = measured_start(schedule, k, t0, received, t_of, runs, ordered)
        if k == anchor:
            began_text = "0 (aligned on it)"
        else:
            began_text = "%+d ms" % round((began - a) * 1000) if began is not None else "–"
        rows.append("| %d | %s | %s | %s | %s | %d of %d | %s |" % (
            k + 1, "100% loss down" if step["outage"] else ("%g Mbit/s" % (step["bps"] / 1e6) if step["bps"] else "unshaped"),
            "–" if step["outage"] else "%g ms" % step["delay"],
            fmt(statistics.median(rates), 2) if rates else "–", fmt(statistics.median(delays), 1) if delays else "–",
            lost, len(in_step), began_text))
    t2 = first_delay_change(schedule, ordered)
    result = (doc.get("download") or {}).get("result") or {}
    stream_rate = (doc.get("stream") or {}).get("rate") or 100
    notes = ["Aligned on %s. Medians over each step's middle (%.1f s left out at each end): the download's payload in %d ms windows, "
             "scaled to the link (× %d/%d); the stream's own %g packets a second (%.2f Mbit/s on the link) are not in it. "
             "*Began vs schedule*: the first stream packet only the new step explains, to within a packet (%.0f ms); – where the "
             "wait in the queue hides the change." % (method, MARGIN_S, WINDOW_S * 1000, result.get("frame_bytes", 1514),
                                                      result.get("payload_bytes", 1448), stream_rate, stream_rate * STREAM_FRAME_BYTES * 8 / 1e6,
                                                      (interval or 0) * 1000)]
    if anchor != 1 and t2 is not None:
        notes.append("The first change of one-way delay from step 1's (by more than %.0f ms, the kernel suite's alignment) came "
                     "%.0f ms after step 1 began; the schedule has step 2 at %.0f ms." % (STEP_CHANGE_MS, (t2 - t0) * 1000, schedule[1]["start"] * 1000))
    notes.append("Stream: %d packets sent, %d received. Download: %s bytes of payload (exit status %s%s). The daemon's history: %d "
                 "changes of the scenario (play and steps)." % (
                     stream.get("sent", 0), len(received), result.get("total_bytes"), (doc.get("download") or {}).get("exitStatus"),
                     ", %s" % result["error"] if result.get("error") else "", len(doc.get("history") or [])))
    path = timeline_plot(doc, schedule, t0, windows, received, t_of, plots_dir)
    return "\n".join(rows) + "\n\n" + "\n\n".join(notes), path


def timeline_plot(doc, schedule, t0, windows, received, t_of, plots_dir):
    """Two panels on one time axis (s from step 1's start): delivered throughput against the
    scheduled rate, each stream packet's one-way delay against the scheduled delay."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return None
    os.makedirs(plots_dir, exist_ok=True)
    end = schedule[-1]["end"]
    packets = sorted((t - t0, d) for t, d in received.values())
    lost = sorted(t - t0 for seq, t in t_of.items() if seq not in received)
    x_lo = max(-1.5, min([p[0] for p in packets] + [w - t0 for w, _ in windows]))
    x_hi = max([p[0] for p in packets] + [w - t0 + WINDOW_S for w, _ in windows] + [end])
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9.6, 6.4), gridspec_kw={"height_ratios": [1, 1.15]})

    def schedule_line(value):
        xs, ys = [x_lo, 0.0], [None, None]
        for step in schedule:
            xs.append(step["start"])
            ys.append(value(step))
        xs.append(x_hi)
        ys.append(ys[-1])
        return xs, [float("nan") if y is None else y for y in ys]

    for ax in (top, bottom):
        ax.axvspan(x_lo, 0, color="0.85", alpha=0.5, linewidth=0)
        for step in schedule:
            ax.axvline(step["start"], color="0.6", linewidth=0.6, linestyle=":")
            if step["outage"]:
                ax.axvspan(step["start"], step["end"], color="tab:red", alpha=0.08, linewidth=0)
        ax.grid(True, axis="y", alpha=0.3)

    peak = max((s["bps"] or 0) for s in schedule) / 1e6 or 1.0
    ceiling = 1.35 * peak
    top.bar([w - t0 for w, _ in windows], [min(r, ceiling) for _, r in windows], width=WINDOW_S, align="edge",
            color="tab:blue", alpha=0.55, label="TCP download, delivered per %d ms (on the link)" % (WINDOW_S * 1000))
    clipped = [(w - t0, r) for w, r in windows if r > ceiling]
    if clipped:
        top.plot([w + WINDOW_S / 2 for w, _ in clipped], [ceiling * 0.97] * len(clipped), "^", color="tab:blue", markersize=5)
        w, r = max(clipped, key=lambda c: c[1])
        top.annotate("up to %.0f Mbit/s" % r, (w + WINDOW_S / 2, ceiling * 0.97), xytext=(4, -12), textcoords="offset points", fontsize=7)
    xs, ys = schedule_line(lambda s: 0.0 if s["outage"] else (s["bps"] / 1e6 if s["bps"] else None))
    top.step(xs, ys, where="post", color="black", linewidth=1.4, label="the scenario's downlink rate (top) and delay (bottom)")
    top.set_ylim(0, ceiling)
    top.set_ylabel("Mbit/s")
    for k, step in enumerate(schedule):
        top.text((step["start"] + step["end"]) / 2, ceiling * 1.01, "outage" if step["outage"] else str(k + 1),
                 ha="center", va="bottom", fontsize=8, color="tab:red" if step["outage"] else "0.3")

    highest = max(s["delay"] for s in schedule)
    delays = [d for _, d in packets if d > 0]
    log_scale = bool(delays) and max(delays) > 4 * highest
    bottom.plot([t for t, _ in packets], [d for _, d in packets], ".", markersize=2.5, color="tab:orange",
                label="UDP packet every 10 ms: one-way delay (the step's + queueing)")
    xs, ys = schedule_line(lambda s: None if s["outage"] else s["delay"])
    bottom.step(xs, ys, where="post", color="black", linewidth=1.4)
    if log_scale:
        bottom.set_yscale("log")
        floor = min(s["delay"] for s in schedule if not s["outage"] and s["delay"] > 0) / 3
        bottom.set_ylim(floor, max(delays) * 1.5)
    else:
        floor = 0
        bottom.set_ylim(0, max(delays + [highest]) * 1.15)
    if lost:
        bottom.plot(lost, [bottom.get_ylim()[0]] * len(lost), "|", color="tab:red", markersize=7, alpha=0.6,
                    label="lost UDP packet (sent then)")
    bottom.set_ylabel("one-way delay, ms" + (" (log)" if log_scale else ""))
    bottom.set_xlabel("seconds from step 1's start (aligned on the packets)")
    if x_lo < 0:
        low, high = bottom.get_ylim()
        middle = math.sqrt(low * high) if log_scale else (low + high) / 2
        bottom.text(x_lo / 2, middle, "off\n(before\nthe\nscenario)", ha="center", va="center", fontsize=7, color="0.35")
    bottom.set_xlim(x_lo, x_hi)
    lengths = {s["end"] - s["start"] for s in schedule}
    if len(lengths) == 1:
        bottom.xaxis.set_major_locator(matplotlib.ticker.MultipleLocator(lengths.pop()))
    handles, labels = [], []
    for ax in (top, bottom):
        h, l = ax.get_legend_handles_labels()
        handles += h
        labels += l
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("linkcond: scenario '%s' played under a TCP download and a UDP stream (real packets, netem)" % doc.get("scenario"), fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path = os.path.join(plots_dir, "scenario-timeline.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ fidelity

TRACE_TOLERANCE = 0.10
# The daemon's resident memory, in decimal megabytes as the target is set.
RSS_TARGET_MB = 15


def traces(results, plots_dir):
    """Trace-driven links (traces.json): per trace and direction, the 1 s windows' errors against
    the trace's capacity, what crossed its outages, and the 100 ms windows' error distribution;
    and the plot of the longest trace's capacity against delivered throughput. The third value
    is whether every 1 s window is within TRACE_TOLERANCE and no outage let more than a frame
    through; None when nothing was measured."""
    doc = load(os.path.join(results, "traces.json"))
    if not doc:
        return "(not measured)", None, None
    rows = ["| trace (÷%d) | direction | seconds | 1 s windows | largest error | mean error | frames in an outage second, at most | 100 ms windows: error p50 / p90 / p99 / max |" % doc[0].get("divisor", 1),
            "|---|---|---|---|---|---|---|---|"]
    passed = True
    for entry in doc:
        r = entry.get("result") or {}
        q = r.get("fine_error_quantiles") or {}
        largest = r.get("largest_error")
        outage = r.get("most_frames_in_an_outage")
        passed = passed and largest is not None and largest <= TRACE_TOLERANCE and (outage is None or outage <= 1) and (r.get("judged") or 0) > 0
        rows.append("| %s | %s | %d | %s | %s | %s | %s | %s |" % (
            entry["trace"], entry["direction"], entry["seconds"], r.get("judged", "–"),
            "%.1f%%" % (largest * 100) if largest is not None else "–",
            "%+.1f%%" % (r["mean_error"] * 100) if r.get("mean_error") is not None else "–",
            outage if outage is not None else "– (none)",
            " / ".join("%.1f%%" % (q[k] * 100) if q.get(k) is not None else "–" for k in ("0.5", "0.9", "0.99", "1.0"))))
    longest = max(doc, key=lambda e: e["seconds"])
    path = trace_plot([e for e in doc if e["trace"] == longest["trace"]], plots_dir)
    notes = ("Each trace in both directions at once, at a quarter of its rates (`scripts/make-traces --divide 4`), under "
             "full-size UDP frames offered at 1.3 times its peak; a window's delivery is its frames × 1 514 bytes, stamped by "
             "the receiving kernel, against the trace's opportunities × 12 000 bits in the same window, timed from when the "
             "daemon began the trace (`trace.monotonicStartMilliseconds`). An outage's second is a 1 s window without an "
             "opportunity. Target: every 1 s window within ±%d%%, at most one frame in an outage's second." % (TRACE_TOLERANCE * 100))
    return "\n".join(rows) + "\n\n" + notes, path, passed


def trace_plot(entries, plots_dir):
    """The trace's capacity against what was delivered, per 100 ms and per 1 s, one panel per direction."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(entries), 1, figsize=(11, 3.2 * len(entries)), sharex=True, squeeze=False)
    for ax, entry in zip(axes[:, 0], entries):
        r = entry.get("result") or {}
        fine = r.get("fine") or []
        windows = r.get("windows") or []
        ax.step([f[0] / 1000 for f in fine], [f[1] / 1e6 for f in fine], where="post", color="black", linewidth=1.2,
                label="the trace's capacity per 100 ms")
        ax.bar([f[0] / 1000 for f in fine], [f[2] / 1e6 for f in fine], width=0.1, align="edge", color="tab:blue", alpha=0.45,
               label="delivered per 100 ms")
        ax.plot([w["from_ms"] / 1000 + 0.5 for w in windows], [w["delivered_bps"] / 1e6 for w in windows], "o", color="tab:orange",
                markersize=4, label="delivered per 1 s (at the second's middle)")
        ax.plot([w["from_ms"] / 1000 + 0.5 for w in windows], [w["capacity_bps"] / 1e6 for w in windows], "_", color="black",
                markersize=10, label="the trace's capacity per 1 s")
        ax.set_ylabel("%s, Mbit/s" % ("downlink" if entry["direction"] == "down" else "uplink"))
        ax.grid(True, axis="y", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds from the trace's start")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("linkcond: trace '%s' (÷%d) played both ways at once, delivered against its capacity (real packets, htb)" % (
        entries[0]["trace"], entries[0].get("divisor", 1)), fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(plots_dir, "trace-replay.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def binomial_interval(n, p):
    mean = n * p
    sd = math.sqrt(n * p * (1 - p))
    return max(0.0, mean - Z99 * sd), min(float(n), mean + Z99 * sd)


def judge(row):
    c, m = row["configured"], row["measured"]
    if m is None:
        return "no result", False
    if row["kind"] == "bandwidth":
        if row["profile"] == "unshaped":
            return ("not limited: %.0f Mbit/s, at least %.0f" % (m / 1e6, UNSHAPED_FLOOR_BPS / 1e6)), m >= UNSHAPED_FLOOR_BPS
        err = (m - c) / c
        return "%+.1f%%" % (100 * err), abs(err) <= 0.05
    if row["kind"] in ("delay", "dns"):
        tol = 1.0 + 0.02 * c
        return "%+.2f ms (±%.2f)" % (m - c, tol), abs(m - c) <= tol
    if row["kind"] == "loss":
        n = row.get("count", 2000)
        lo, hi = binomial_interval(n, c / 100.0)
        lost = round(m / 100.0 * n)
        return "%d of %d lost, 99%% interval [%.1f, %.1f]" % (lost, n, lo, hi), lo <= lost <= hi
    return "", True


def fidelity(results):
    rows = []
    try:
        with open(os.path.join(results, "fidelity.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    tables = {}
    for row in rows:
        verdict, ok = judge(row)
        row["verdict"], row["ok"] = verdict, ok
        section = "profiles" if not row["profile"].startswith("grid") and row["profile"] != "unshaped" else row["kind"]
        tables.setdefault(section, []).append(row)
    out = []
    units = {"bandwidth": lambda v: "%s kbit/s" % fmt(v / 1e3, 1) if v is not None else "–"}
    for section in ("bandwidth", "delay", "loss", "profiles"):
        if section not in tables:
            continue
        out.append("\n#### %s\n" % section.capitalize())
        out.append("| profile | kind | direction | family | configured | measured | error | within target |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in tables[section]:
            show = units.get(r["kind"], lambda v: ("%s %s" % (fmt(v, 2), r["unit"])) if v is not None else "–")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["profile"], r["kind"], r["direction"], r["family"], show(r["configured"]) if r["profile"] != "unshaped" else "unshaped",
                show(r["measured"]), r["verdict"], "yes" if r["ok"] else "**no**"))
    passed = sum(r["ok"] for r in rows)
    return "\n".join(out), rows, passed


# ------------------------------------------------------------------ plots

def plots(rows, methods, plots_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    os.makedirs(plots_dir, exist_ok=True)
    made = []

    def grid(kind, scale):
        pts = [r for r in rows if r["kind"] == kind and r["profile"].startswith("grid") and r["measured"] is not None]
        if not pts:
            return
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for (direction, family), marker in ((("up", "ipv4"), "o"), (("down", "ipv4"), "s"), (("up", "ipv6"), "^"), (("down", "ipv6"), "v"),
                                            (("up+down", "ipv4"), "o"), (("up+down", "ipv6"), "^")):
            sel = [r for r in pts if r["direction"] == direction and r["family"] == family]
            if kind == "delay":
                sel = [dict(r, direction=("up" if "up-delay" in r["profile"] else "down")) for r in sel]
            if sel:
                ax.plot([r["configured"] * scale for r in sel], [r["measured"] * scale for r in sel], marker,
                        label="%s %s" % (direction, family), alpha=0.75)
        lo = min(r["configured"] * scale for r in pts)
        hi = max(r["configured"] * scale for r in pts)
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="promised")
        return fig, ax

    for kind, scale, unit, log in (("bandwidth", 1e-6, "Mbit/s", True), ("delay", 1.0, "ms (extra round trip)", True), ("loss", 1.0, "%", False)):
        made_plot = grid(kind, scale)
        if not made_plot:
            continue
        fig, ax = made_plot
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("configured " + unit)
        ax.set_ylabel("measured " + unit)
        ax.set_title("linkcond %s: configured vs measured (real packets, netem)" % kind)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(plots_dir, "fidelity-%s.png" % kind)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)

    if methods:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for label, d in methods:
            xs = sorted(d["samplesMilliseconds"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.plot(xs, ys, label="%s (p50 %s ms)" % (label, fmt(d["p50Milliseconds"], 2)))
        ax.set_xscale("log")
        ax.set_xlabel("switch latency, ms (request to reply, kernel state applied)")
        ax.set_ylabel("fraction of switches")
        ax.set_title("Switching profiles: linkcond vs a tc script vs tcconfig")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(plots_dir, "switch-latency.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


def commands(results):
    """`linkcond status` as a whole command next to curl doing the same request."""
    data = load(os.path.join(results, "commands.json"))
    if not data:
        return "(no measurement of whole commands)", None
    out = ["| command | runs | median ms | p90 ms | peak RSS (median of runs) | peak RSS (highest) |", "|---|---|---|---|---|---|"]
    for d in data:
        out.append("| `%s` | %d | %s | %s | %s | %s |" % (
            d["command"].replace(os.getcwd() + "/", ""), d["runs"], fmt(d["medianMilliseconds"], 1), fmt(d["p90Milliseconds"], 1),
            memory(d["medianPeakRSSKiB"]), memory(d["peakRSSKiB"])))
    return "\n".join(out), data


def scale_table(results, name, held, added, off):
    """Many conditions at once (NAME.json of a scale part): switching one of them at each size."""
    d = load(os.path.join(results, name + ".json"))
    if not d:
        return "(not measured)", None
    out = ["| %s | netlink requests per switch | switch p50 ms | p90 ms | p99 ms | %s, mean ms |" % (held, added),
           "|---|---|---|---|---|---|"]
    for row in d["scale"]:
        add = row.get("addMillisecondsPerCondition")
        out.append("| %d | %s | %s | %s | %s | %s |" % (
            row["active"], fmt(row["stepsPerSwitch"]), fmt(row["p50Milliseconds"]), fmt(row["p90Milliseconds"]),
            fmt(row["p99Milliseconds"]), fmt(add) if add is not None else ""))
    out.append("\n`off --all` with %d %s: %s ms." % (d["scale"][-1]["active"], off, fmt(d["offAllMilliseconds"])))
    return "\n".join(out), d


def conditions(results):
    """Many conditions at once: one per interface, switching the default one."""
    return scale_table(results, "conditions", "conditions held", "adding one condition (build)", "conditions")


def matches(results):
    """Many conditions on peers of one interface, switching one of them."""
    return scale_table(results, "matches", "peers' conditions held", "adding one peer", "peers' conditions")


def metrics(results, footprint):
    """Counters and metrics (metrics.json): scrapes at each number of conditions, then the memory
    after them and 10 000 switches with scrapes between, and the minute left alone after. The
    third value is whether the RSS stayed within RSS_TARGET_MB and the idle minute cost no CPU;
    None when nothing was measured."""
    d = load(os.path.join(results, "metrics.json"))
    if not d:
        return "(not measured)", None, None
    rows = ["| conditions held | `GET /metrics` p50 ms | p99 ms | its size | `GET /v1/stats` p50 ms | p99 ms |",
            "|---|---|---|---|---|---|"]
    for row in d["scale"]:
        rows.append("| %d | %s | %s | %.1f kB | %s | %s |" % (
            row["conditions"], fmt(row["metrics"]["p50Milliseconds"]), fmt(row["metrics"]["p99Milliseconds"]),
            row["metricsBytes"] / 1000, fmt(row["stats"]["p50Milliseconds"]), fmt(row["stats"]["p99Milliseconds"])))
    # /proc/PID/stat counts in USER_HZ, 100 on Linux unless the footprint part read another.
    ticks = (footprint or {}).get("clock_ticks_per_second", 100)
    rss_mb = d["rssAfterSwitchesKiB"] * 1.024 / 1000
    rows += ["", "| measure | value |", "|---|---|",
             "| RSS after start (metrics listener open) | %s |" % memory(d["rssStartKiB"]),
             "| RSS after the scrapes, %d switches and %d scrapes between them | %s, %.1f MiB private |" % (
                 d["switches"], d["scrapesBetween"], memory(d["rssAfterSwitchesKiB"]), d["rssAfterSwitchesAnonKiB"] / 1024),
             "| %d s left alone afterwards: CPU time | %.2f s |" % (d["idleSeconds"], d["idleCpuTicks"] / ticks),
             "| the same minute: context switches of the threads alive throughout | %d |" % d["idleContextSwitches"]]
    if "idleSettledSeconds" in d:
        rows.append("| before the minute: seconds until the threads stopped ending or starting; threads that ended in it | %d; %d |" % (
            d["idleSettledSeconds"], d["idleThreadsEnded"]))
    passed = rss_mb <= RSS_TARGET_MB and d["idleCpuTicks"] == 0
    return "\n".join(rows), d, passed


def peer_scale(results):
    """User space alone (model kernel, this machine): one peer's switch beside others."""
    d = load(os.path.join(results, "peer-scale.json"))
    if not d:
        return "(not measured)"
    out = ["| peers' conditions held | switch p50 ms | p90 ms | p99 ms |", "|---|---|---|---|"]
    out += ["| %d | %s | %s | %s |" % (row["peers"], fmt(row["switchLatency"]["p50Milliseconds"]), fmt(row["switchLatency"]["p90Milliseconds"]),
                                      fmt(row["switchLatency"]["p99Milliseconds"])) for row in d]
    return "\n".join(out)


def sandboxes(results):
    """Many run --isolated sandboxes at once, switching the default condition beside them."""
    d = load(os.path.join(results, "sandboxes.json"))
    if not d:
        return "(not measured)", None
    out = ["| sandboxes held | their links on the host | netlink requests per switch | switch p50 ms | p90 ms | p99 ms | "
           "creating one (request to active), mean ms | max ms |",
           "|---|---|---|---|---|---|---|---|"]
    for row in d["scale"]:
        out.append("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
            row["listed"], row["hostLinks"], fmt(row["stepsPerSwitch"]), fmt(row["p50Milliseconds"]), fmt(row["p90Milliseconds"]),
            fmt(row["p99Milliseconds"]), fmt(row["createMeanMilliseconds"]), fmt(row["createMaxMilliseconds"])))
    out.append("\nEnding all %d at once (their connections closed): %s ms until none is listed and no link is left "
               "(%d listed, %d links left)." % (d["scale"][-1]["listed"], fmt(d["endAllMilliseconds"]), d["leftListed"], d["leftLinks"]))
    return "\n".join(out), d


def capture_rates(rows):
    """A table of what a capture saw, lost and wrote at each offered rate, and the highest rate
    (iperf3's sent packets over its seconds) it kept up with entirely."""
    out = ["| offered, packets/s | iperf3 sent | of them in the file | missing | the capture saw | lost (its ring full) | written | "
           "daemon CPU s |",
           "|---|---|---|---|---|---|---|---|"]
    lossless = None
    for row in rows:
        out.append("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
            row["offeredPacketsPerSecond"], row.get("iperfPackets"), row.get("iperfPacketsInFile"), row.get("iperfMissing"),
            row.get("received"), row.get("captureDrops"), row.get("written"), fmt(row.get("daemonCpuSeconds"), 2)))
        if row.get("captureDrops") == 0 and row.get("iperfPackets") and row.get("iperfMissing") == 0:
            lossless = max(lossless or 0, row["iperfPackets"] / row["seconds"])
    out.append("\nHighest rate captured without a loss: %s packets/s (iperf3's sent packets over its seconds)." %
               (fmt(lossless, 0) if lossless else "none"))
    return out, lossless


def capture_throughput(rows, title):
    """A table of TCP throughput per mode (no capture, a capture read, a stalled reader), and
    each mode's median in bits a second."""
    by_mode = {}
    for row in rows:
        by_mode.setdefault(row["mode"], []).append(row["bitsPerSecond"])
    medians = {mode: statistics.median([b for b in values if b]) if any(values) else None for mode, values in by_mode.items()}
    out = ["\n| %s | rounds, Mbit/s | median Mbit/s |\n|---|---|---|" % title]
    labels = {"none": "no capture", "capture": "a capture read into a file", "stalled": "a reader that never reads"}
    for mode in ("none", "capture", "stalled"):
        values = by_mode.get(mode, [])
        out.append("| %s | %s | %s |" % (labels[mode], ", ".join(fmt(v / 1e6 if v else None, 1) for v in values),
                                         fmt(medians.get(mode) / 1e6 if medians.get(mode) else None, 1)))
    return out, medians


def capture_memory(rows, title):
    """The daemon's RSS before, at most during and after each stalled reader."""
    out = ["\n| the daemon's RSS around a stalled reader (%s) | before | at most during | after |\n|---|---|---|---|" % title]
    for m in rows:
        out.append("| round %d | %s | %s | %s |" % (m["round"] + 1, memory(m["beforeKiB"]), memory(m["peakKiB"]), memory(m["afterKiB"])))
    return out


def captures(results):
    """Packet traces (captures-native.json on this machine's kernel, captures.json in the VM):
    per offered rate, what the capture saw, lost and wrote; in the VM, the shaped throughput with
    no capture, a capture read into a file, and a reader that never reads, and the daemon's
    memory around each stalled reader. Passes when some rate was captured without a loss, a
    stalled reader cost the shaped traffic under 10% of its median throughput, and the daemon
    grew by under 16 MiB while one stalled."""
    native = load(os.path.join(results, "captures-native.json"))
    d = load(os.path.join(results, "captures.json"))
    if not d or not native:
        return "(not measured)", None
    out = ["On this machine's kernel (two namespaces and a veth pair, the condition off: no netem here):\n"]
    lines, native_lossless = capture_rates(native["rates"])
    out += lines
    if native.get("throughput"):
        out += capture_throughput(native["throughput"], "unshaped TCP on this machine (veth, no netem)")[0]
        out += capture_memory(native.get("memory") or [], "this machine")
    out.append("\nIn the VM (emulated, under `LC Bench Capture Rate`: 1 ms each way):\n")
    lines, vm_lossless = capture_rates(d["rates"])
    out += lines
    lines, medians = capture_throughput(d["throughput"], "shaped TCP in the VM (100 Mbit/s, 5 ms each way)")
    out += lines
    growth = [m["peakKiB"] - m["beforeKiB"] for m in d["memory"] + (native.get("memory") or []) if m.get("peakKiB") and m.get("beforeKiB")]
    out += capture_memory(d["memory"], "VM")
    ends = d.get("captureEnds") or []
    if ends:
        out.append("\nThe history's capture ends: " + "; ".join("`%s`" % e for e in ends))
    cost_ok = medians.get("none") and medians.get("stalled") and medians["stalled"] >= 0.9 * medians["none"]
    passed = bool(native_lossless) and bool(vm_lossless) and bool(cost_ok) and bool(growth) and max(growth) < 16 * 1024
    return "\n".join(out), passed


def scale_checks(label, data, count_field):
    """Requests per switch constant, and the p50 at the largest size within 2× of the smallest."""
    scale = (data or {}).get("scale") or []
    if len(scale) < 2:
        return [(label, "missing", "measured", False)]
    steps = {row["stepsPerSwitch"] for row in scale}
    growth = scale[-1]["p50Milliseconds"] / scale[0]["p50Milliseconds"]
    return [("netlink requests per switch, %d to %d %s" % (scale[0][count_field], scale[-1][count_field], label),
             ", ".join(fmt(row["stepsPerSwitch"]) for row in scale), "constant", len(steps) == 1),
            ("switch p50 at %d %s / at %d" % (scale[-1][count_field], label, scale[0][count_field]), "%.2f×" % growth, "<= 2×", growth <= 2)]


def targets(methods, native_data, hitless_summary, footprint, rows, passed, command_data, condition_data, match_data, sandbox_data):
    """Every figure with a target, and whether it met it; a missing figure misses."""
    by = dict(methods)
    checks = []

    def ratio(label):
        base, other = by.get("linkcond"), by.get(label)
        return other["p50Milliseconds"] / base["p50Milliseconds"] if base and other else None

    for label, floor in (("tc script", 20), ("tcconfig", 200)):
        r = ratio(label)
        checks.append(("switch p50, %s / linkcond" % label, "%s" % ("%.0f×" % r if r else "missing"), ">= %d×" % floor, r is not None and r >= floor))
    if native_data:
        checks.append(("native switch p50 (estimate)", "%.2f ms" % native_data["estimatedSwitchP50Milliseconds"], "<= 1 ms", native_data["estimatedSwitchP50Milliseconds"] <= 1))
        checks.append(("native switch p99 (estimate)", "%.2f ms" % native_data["estimatedSwitchP99Milliseconds"], "<= 5 ms", native_data["estimatedSwitchP99Milliseconds"] <= 5))
    else:
        checks.append(("native switch", "missing", "measured", False))
    for direction in ("up", "down"):
        d = hitless_summary.get(direction) if hitless_summary else None
        checks.append(("hitless %s: unshaped and lost beyond the profiles" % direction,
                       "%d, %d" % (d["unshaped"], d["beyond"]) if d else "missing", "0, 0", bool(d and d["ok"])))
    checks.append(("hitless TCP transfer", "intact" if hitless_summary and hitless_summary.get("tcp_ok") else "broken or missing", "intact",
                   bool(hitless_summary and hitless_summary.get("tcp_ok"))))
    if footprint:
        rss = footprint["rss_after_10000_switches_kib"] * 1.024 / 1000
        checks.append(("RSS after 10 000 switches", "%.1f MB" % rss, "<= %g MB" % RSS_TARGET_MB, rss <= RSS_TARGET_MB))
        checks.append(("idle 60 s: CPU", "%d ticks" % footprint["idle_cpu_ticks"], "0", footprint["idle_cpu_ticks"] == 0))
    else:
        checks.append(("footprint", "missing", "measured", False))
    checks += scale_checks("conditions", condition_data, "active")
    checks += scale_checks("peers' conditions", match_data, "active")
    checks += scale_checks("sandboxes", sandbox_data, "listed")
    if sandbox_data:
        left = sandbox_data["leftListed"] + sandbox_data["leftLinks"]
        checks.append(("sandboxes left after their connections closed", "%d" % left, "0", left == 0))
    checks.append(("fidelity rows within target", "%d of %d" % (passed, len(rows)), "all, and some", len(rows) > 0 and passed == len(rows)))
    status = next((d for d in command_data or [] if d["command"].endswith(" status")), None)
    curl = next((d for d in command_data or [] if d["command"].startswith("curl")), None)
    if status and curl:
        ratio = status["medianMilliseconds"] / curl["medianMilliseconds"]
        checks.append(("`linkcond status` / curl, median wall time", "%.2f×" % ratio, "<= 1.5×", ratio <= 1.5))
        peak = status["medianPeakRSSKiB"] * 1.024 / 1000
        checks.append(("`linkcond status` peak RSS (median of runs)", "%.1f MB" % peak, "<= %g MB" % RSS_TARGET_MB, peak <= RSS_TARGET_MB))
    else:
        checks.append(("whole commands", "missing", "measured", False))
    lines = ["| target | measured | wanted | met |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % (name, measured, wanted, "yes" if ok else "**no**") for name, measured, wanted, ok in checks]
    return "\n".join(lines), [name for name, _, _, ok in checks if not ok]


def main():
    results = sys.argv[1]
    plots_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join("docs", "performance")
    machine = load(os.path.join(results, "machine.json"), {})
    footprint = load(os.path.join(results, "footprint.json"), {})
    lat_table, methods = latency(results)
    native_table, native_data = native(results)
    hit_table, hit_summary = hitless(results)
    command_table, command_data = commands(results)
    condition_table, condition_data = conditions(results)
    match_table, match_data = matches(results)
    sandbox_table, sandbox_data = sandboxes(results)
    scenario_table, scenario_plot = scenario(results, plots_dir)
    trace_table, trace_path, traces_passed = traces(results, plots_dir)
    capture_table, captures_passed = captures(results)
    metrics_table, _, metrics_passed = metrics(results, footprint)
    fid_tables, rows, passed = fidelity(results)
    made = plots(rows, methods, plots_dir)

    print("### Machine\n")
    print("```\n%s\n```\n" % json.dumps(machine, indent=2))
    print("### Switch latency (in the VM)\n")
    print(lat_table + "\n")
    print("### Switch latency on this machine's own kernel (estimate from measured parts)\n")
    print(native_table + "\n")
    print("### Hitless switching\n")
    print(hit_table + "\n")
    print("### A scenario played (timed steps under a TCP download and a UDP stream)\n")
    print(scenario_table + "\n")
    if scenario_plot:
        print("![%s](%s)\n" % (os.path.basename(scenario_plot), os.path.relpath(scenario_plot, "docs")))
    print("### Trace-driven links (each shipped trace against what was delivered)\n")
    print(trace_table + "\n")
    if trace_path:
        print("![%s](%s)\n" % (os.path.basename(trace_path), os.path.relpath(trace_path, "docs")))
    print("### Packet traces (the rate a capture keeps up with, its cost, a reader that stops)\n")
    print(capture_table + "\n")
    print("### Counters and metrics (scrapes, then memory and the idle minute after them)\n")
    print(metrics_table + "\n")
    print("### The client as a command (this machine, whole processes, interleaved)\n")
    print(command_table + "\n")
    print("### Many conditions at once (one per interface, switching the default one)\n")
    print(condition_table + "\n")
    print("### Many peers of one interface (switching one of them)\n")
    print(match_table + "\n")
    print("User space alone, on this machine (model kernel):\n")
    print(peer_scale(results) + "\n")
    print("### Many sandboxes at once (switching the default condition beside them)\n")
    print(sandbox_table + "\n")
    print("### Footprint\n")
    if footprint:
        ticks = footprint["clock_ticks_per_second"]
        print("| measure | value |\n|---|---|")
        print("| start to socket ready (5 starts) | %s ms |" % ", ".join(fmt(x, 0) for x in footprint["startup_ms"]))
        print("| RSS after start | %s |" % memory(footprint["rss_start_kib"]))
        if "rss_start_anon_kib" in footprint:
            print("| of which private (anonymous) / file-backed (shared libraries, binary) | %.1f MiB / %.1f MiB |" % (
                footprint["rss_start_anon_kib"] / 1024, footprint["rss_start_file_kib"] / 1024))
        print("| RSS after 10 000 switches | %s |" % memory(footprint["rss_after_10000_switches_kib"]))
        if "rss_after_10000_switches_anon_kib" in footprint:
            print("| of which private (anonymous) | %.1f MiB |" % (footprint["rss_after_10000_switches_anon_kib"] / 1024))
        print("| threads | %d |" % footprint["threads"])
        print("| idle 60 s, no lease: context switches (all threads) | %d |" % footprint["idle_context_switches"])
        print("| idle 60 s, no lease: CPU time | %.2f s |" % (footprint["idle_cpu_ticks"] / ticks))
        if "idle_settled_seconds" in footprint:
            print("| before the idle minute: seconds until the threads stopped ending or starting; threads that ended in it | %d; %d |" % (
                footprint["idle_settled_seconds"], footprint["idle_threads_ended"]))
        print()
    print("### Fidelity (%d of %d measurements within target)\n" % (passed, len(rows)))
    print(fid_tables + "\n")
    for path in made:
        print("![%s](%s)" % (os.path.basename(path), os.path.relpath(path, "docs")))
    target_table, missed = targets(methods, native_data, hit_summary, footprint, rows, passed, command_data, condition_data,
                                   match_data, sandbox_data)
    print("\n### Targets\n")
    print(target_table)
    if traces_passed is not True:
        missed.append("trace-driven links: %s" % ("not measured" if traces_passed is None else "a 1 s window beyond ±10%, or a frame more across an outage"))
    if captures_passed is not True:
        missed.append("packet traces: %s" % ("not measured" if captures_passed is None
                                            else "no rate without a loss, a stalled reader cost over 10% of the throughput, or the daemon grew 16 MiB"))
    if metrics_passed is not True:
        missed.append("counters and metrics: %s" % ("not measured" if metrics_passed is None
                                                    else "RSS above %g MB after the scrapes and switches, or CPU used idle" % RSS_TARGET_MB))
    if missed:
        print("report: %d target(s) missed: %s" % (len(missed), "; ".join(missed)), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
