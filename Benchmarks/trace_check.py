#!/usr/bin/env python3
"""Delivered throughput against a trace's capacity, window by window.

  trace_check.py TRACE ARRIVALS.json DIRECTION START_MS [--until-s S] [--width-ms 1000]

TRACE is a mahimahi trace (docs/profiles.md): one line per 1500-byte delivery opportunity, the
millisecond it falls on, looping after the last. ARRIVALS.json is `probe.py udprate --arrivals`
output: DIRECTION's frames' arrival stamps (CLOCK_MONOTONIC ns) and their size on the link.
START_MS is when the trace began playing on the same clock (the daemon's status,
`trace.monotonicStartMilliseconds`).

Each window [start + k·width, start + (k+1)·width) that the flow covers whole is judged: the
bits delivered in it (frames × frame bytes × 8: what htb counts) against the trace's capacity
there (opportunities × 12 000 bits). Prints one JSON object: every window's capacity, delivery
and error, the largest error of the windows with a capacity, the most delivered in a window
without one (an outage), and the distribution of the errors of 100 ms windows.
"""

import argparse
import bisect
import json
import sys

OPPORTUNITY_BITS = 12_000


def read_trace(path):
    with open(path, encoding="ascii") as file:
        return [int(line) for line in file if line.strip()]


class LoopingTrace:
    """Opportunities of a looping trace in any stretch of time, from a running sum over one
    period: an opportunity at the period plays at the same moment as one at 0 of the next
    loop, so it is counted at 0."""

    def __init__(self, timestamps):
        self.period = timestamps[-1]
        per_ms = [0] * self.period
        for t in timestamps:
            per_ms[t % self.period] += 1
        self.before = [0]  # before[m]: opportunities in [0, m) of one period
        for count in per_ms:
            self.before.append(self.before[-1] + count)

    def until(self, ms):
        loops, rest = divmod(ms, self.period)
        return loops * self.before[-1] + self.before[rest]

    def between(self, start_ms, end_ms):
        return self.until(end_ms) - self.until(start_ms)


def windows(trace, arrivals_ns, frame_bytes, start_ns, end_ns, width_ms):
    result = []
    k = 0
    while start_ns + (k + 1) * width_ms * 1_000_000 <= end_ns:
        low = start_ns + k * width_ms * 1_000_000
        high = low + width_ms * 1_000_000
        frames = bisect.bisect_left(arrivals_ns, high) - bisect.bisect_left(arrivals_ns, low)
        capacity = trace.between(k * width_ms, (k + 1) * width_ms) * OPPORTUNITY_BITS * 1000 // width_ms
        delivered = frames * frame_bytes * 8 * 1000 // width_ms
        error = (delivered - capacity) / capacity if capacity else None
        result.append({"from_ms": k * width_ms, "capacity_bps": capacity, "delivered_bps": delivered,
                       "frames": frames, "error": round(error, 4) if error is not None else None})
        k += 1
    return result


def quantile(sorted_values, q):
    if not sorted_values:
        return None
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("arrivals")
    p.add_argument("direction", choices=("up", "down"))
    p.add_argument("start_ms", type=float)
    p.add_argument("--until-s", type=float, help="judge no window beyond this many seconds from the start")
    p.add_argument("--width-ms", type=int, default=1000)
    a = p.parse_args()

    trace = LoopingTrace(read_trace(a.trace))
    measured = json.load(open(a.arrivals))
    frame_bytes = measured["frame_bytes"]
    direction = measured.get(a.direction, measured)
    arrivals = direction.get("arrivals_ns") or []
    start_ns = int(a.start_ms * 1_000_000)
    # The flow covers a window whole when frames arrive on both sides of it.
    end_ns = arrivals[-1] if arrivals else start_ns
    if a.until_s is not None:
        end_ns = min(end_ns, start_ns + int(a.until_s * 1e9))
    judged = windows(trace, arrivals, frame_bytes, start_ns, end_ns, a.width_ms) if arrivals and arrivals[0] < start_ns else []
    fine = windows(trace, arrivals, frame_bytes, start_ns, end_ns, 100) if judged else []

    with_capacity = [w for w in judged if w["capacity_bps"]]
    outages = [w for w in judged if not w["capacity_bps"]]
    fine_errors = sorted(abs(w["error"]) for w in fine if w["error"] is not None)
    json.dump({
        "direction": a.direction, "trace": a.trace, "sent": direction.get("sent"), "received": len(arrivals),
        "frames_before_start": sum(1 for t in arrivals if t < start_ns),
        "windows": judged,
        "judged": len(judged),
        "largest_error": max((abs(w["error"]) for w in with_capacity), default=None),
        "mean_error": round(sum(w["error"] for w in with_capacity) / len(with_capacity), 4) if with_capacity else None,
        "outage_windows": len(outages),
        "most_frames_in_an_outage": max((w["frames"] for w in outages), default=None),
        "fine_windows": len(fine_errors),
        "fine": [[w["from_ms"], w["capacity_bps"], w["delivered_bps"]] for w in fine],
        "fine_error_quantiles": {str(q): round(quantile(fine_errors, q), 4) if fine_errors else None for q in (0.5, 0.9, 0.99, 1.0)},
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
