"""Conditions that change over time, as packets saw them: a scenario's steps and a trace's
windows, and the probes that run in the background while a test changes the condition.

Both namespaces share the VM's CLOCK_MONOTONIC: a stream packet's arrival stamp (the kernel's)
minus its send stamp is its one-way delay, and netem fixes a packet's delay when the packet
enters it, so the delay tells which step was in force when the packet was sent. The daemon
reports a trace's start on the same clock (`trace.monotonicStartMilliseconds`), which lines
each frame's arrival up with the trace's windows.
"""

from __future__ import annotations

import bisect
import json
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .checks import quantile
from .probes import PROBE, Probes, ProbeFailed
from .system import REPO, SYSTEM_PYTHON, HarnessError, run

MAKE_TRACES = REPO / "scripts" / "make-traces"
#: One delivery opportunity of a mahimahi trace: a 1500-byte packet.
OPPORTUNITY_BITS = 12_000


# ---------------------------------------------------------------- probes in the background

class BackgroundProbe:
    """A probe.py command running while the test changes the condition; `result` waits for its
    JSON and raises ProbeFailed when it did not measure."""

    def __init__(self, probes: Probes, command: str, *args: Any, limit: float):
        self.command = command
        self.limit = limit
        argv = probes.namespace.argv(SYSTEM_PYTHON, PROBE, command, *map(str, args))
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)

    def result(self) -> dict:
        try:
            out, err = self.process.communicate(timeout=self.limit)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise ProbeFailed(f"{self.command}: no result within {self.limit} s") from None
        if self.process.returncode != 0:
            raise ProbeFailed(f"{self.command}: exited {self.process.returncode}: {err.strip()[-400:]}")
        try:
            return json.loads(out)
        except ValueError:
            raise ProbeFailed(f"{self.command}: no JSON in its output: {out[:200]!r} {err[-300:]!r}") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def stream(probes: Probes, host: str, direction: str, rate: float, duration: float, ready: Path,
           grace: float = 1) -> BackgroundProbe:
    """Timestamped UDP packets at RATE a second each way (`up`, `down`, `both`) for DURATION
    seconds; READY appears once the first arrives down (up alone: once sending starts). Its
    result has, per direction, `sent` and `packets` ([sequence, sent ns, received ns])."""
    ready.unlink(missing_ok=True)
    return BackgroundProbe(probes, "stream", "--dir", direction, "--host", host, "--ctl", probes.server.ctl,
                           "--rate", rate, "--duration", duration, "--grace", grace, "--ready", ready,
                           limit=duration + grace + 90)


def transfer(probes: Probes, direction: str, host: str, duration: float) -> BackgroundProbe:
    """A TCP bulk transfer for DURATION seconds, with its series of (seconds, payload bytes so
    far) at the receiver."""
    return BackgroundProbe(probes, "throughput", "--dir", direction, "--host", host, "--ctl", probes.server.ctl,
                           "--duration", duration, "--skip", 0, "--series", limit=duration + 90)


def frames_both_ways(probes: Probes, host: str, bps: float, until: Path, ready: Path,
                     longest: float = 90) -> BackgroundProbe:
    """Full-size UDP frames offered at BPS in both directions at once until UNTIL appears, each
    frame's arrival stamped (`up`/`down` `arrivals_ns`, and `packets`: [sequence, sent ns,
    arrival ns]); READY appears once frames arrive down."""
    until.unlink(missing_ok=True)
    ready.unlink(missing_ok=True)
    return BackgroundProbe(probes, "udprate", "--dir", "both", "--host", host, "--ctl", probes.server.ctl,
                           "--bps", bps, "--offer", 1, "--duration", longest, "--until", until, "--skip", 0,
                           "--grace", 2, "--arrivals", "--packets", "--ready", ready, limit=longest + 120)


def payload_after(series: Sequence[Sequence[float]], seconds: float) -> int | None:
    """Payload bytes a transfer's receiver got after SECONDS from its start; None without a series."""
    if not series:
        return None
    before = [received for t, received in series if t <= seconds]
    return series[-1][1] - (before[-1] if before else 0)


# ---------------------------------------------------------------- the machine's own time

_WATCH = r"""
import json, signal, sys, time
late_ms, worst, stalls, stop = float(sys.argv[1]), 0.0, [], []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
print("watching", flush=True)
while not stop:
    due = time.monotonic() + 0.005
    time.sleep(0.005)
    late = (time.monotonic() - due) * 1000
    worst = max(worst, late)
    if late > late_ms:
        stalls.append((round(due * 1000, 1), round(late, 1)))
print(json.dumps({"worst": worst, "stalls": stalls}), flush=True)
"""


class StallWatch:
    """Whether the machine itself stopped while a measurement ran: a process of its own (no
    lock shared with the test's) sleeps 5 ms at a time and notes every wake-up more than LATE_MS
    late. A VM whose host takes its CPU away stops its timers, its shaper and its packets
    alike: a step begins late, a second of a trace carries less, and it is the host's doing,
    not linkcond's. Under User-mode Linux alone on a CPU a sleep wakes within a millisecond."""

    def __init__(self, late_ms: float = 10):
        self.late_ms = late_ms
        self.stalls: list[tuple[float, float]] = []  # (CLOCK_MONOTONIC ms, how late)
        self.worst_ms: float | None = None
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "StallWatch":
        # Real-time, so that the machine's own busy processes (the probes) do not hold it up.
        self.process = subprocess.Popen(["chrt", "--fifo", "50", SYSTEM_PYTHON, "-c", _WATCH, str(self.late_ms)],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "watching":
            raise HarnessError("the stall watch did not start")
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        try:
            seen = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise HarnessError(f"the stall watch said nothing readable: {out[-200:]!r}") from None
        self.worst_ms, self.stalls = seen["worst"], [tuple(s) for s in seen["stalls"]]

    def summary(self) -> str:
        worst = f"{self.worst_ms:.1f} ms" if self.worst_ms is not None else "not read"
        return f"the latest wake-up {worst} late; stalls over {self.late_ms:g} ms (at ms, ms late) {self.stalls[:8]}"


# ---------------------------------------------------------------- a scenario's steps

@dataclass
class StepsSeen:
    """A stream's packets against a scenario whose steps alternate two delays."""

    sent: int
    received: int
    #: Sent before the play was asked for, left out.
    before_play: int
    #: Sent after the play was asked for, at the delay in force before it (until the first step).
    before_first_step: int
    #: Judged: from the first step's start on.
    judged: int
    #: Which delay each step seen had, in order, and when (send time, ms) its first packet left.
    kinds: list[float] = field(default_factory=list)
    starts_ms: list[float] = field(default_factory=list)
    #: Each step's start after the first against the first's plus whole steps, ms.
    offsets_ms: list[float] = field(default_factory=list)
    #: How long before the first step's first packet the packet before it left, ms: the first
    #: step began within that, so every offset may read up to that much early.
    first_start_gap_ms: float | None = None
    #: Each step's delay as its packets took it (their 10th percentile, which packets held up
    #: on their way do not move) less the step's delay, ms.
    step_delay_ms: list[float] = field(default_factory=list)
    #: Packets more than SHORT ms below their own step's delay (the step in force when they
    #: were sent): a change that let a packet through with less than its step's values.
    below_own_step: int = 0
    #: The most a packet's delay exceeded its own step's, ms (a packet held up on its way).
    most_above_ms: float | None = None
    packet_interval_ms: float | None = None
    #: The delays of the packets sent after the play was asked for: 10th, 50th, 90th percentiles.
    delays_ms: list[float] = field(default_factory=list)

    @property
    def changes(self) -> int:
        return max(len(self.starts_ms) - 1, 0)

    def summary(self) -> str:
        return (f"{self.received} of {self.sent} arrived, {self.before_play} before the play, "
                f"{self.before_first_step} before the first step, {self.judged} judged; steps {self.kinds}; "
                f"offsets {self.offsets_ms} ms (the first step's start known to {self.first_start_gap_ms} ms); each step's delay less its own {self.step_delay_ms} ms; "
                f"{self.below_own_step} below their step's delay, the most above {self.most_above_ms} ms; "
                f"interval {self.packet_interval_ms} ms")


def steps_seen(direction: dict, after_ms: float, before: float, low: float, high: float, step_ms: float,
               below: float = 1.0, on_time: float = 2.0, short: float = 2.0, confirm: int = 10) -> StepsSeen:
    """What DIRECTION's packets (a `stream` result's `up` or `down`) saw of a scenario whose steps
    alternate LOW and HIGH ms of delay every STEP_MS, played at AFTER_MS (CLOCK_MONOTONIC) over
    a profile of BEFORE ms.

    A packet is never early, but may be late: a VM stopped for a moment releases the packets
    due meanwhile at once, each as late as it waited. A packet is on time at a delay when it
    took that delay, at most BELOW ms less (the clocks' reads) or ON_TIME ms more; a late one
    says nothing of its step, and a few held up together may happen to be on time at another
    step's delay. A step begins with a packet on time at its delay when all but two of the
    CONFIRM packets on time from it on are at that delay; each packet belongs to the step that
    had begun when it was sent, and must have taken its delay, at most SHORT ms less."""
    packets = sorted(direction.get("packets", []), key=lambda p: p[1])
    samples = [(sent / 1e6, (received - sent) / 1e6) for _, sent, received in packets]
    first = next((i for i, (sent, _) in enumerate(samples) if sent >= after_ms), len(samples))
    samples = samples[first:]
    values = (before, low, high)
    on_time_at = [next((v for v in values if v - below <= delay <= v + on_time), None) for _, delay in samples]
    timely = [i for i, v in enumerate(on_time_at) if v is not None]
    kinds, start_indexes = [], []
    current = before
    for k, index in enumerate(timely):
        value = on_time_at[index]
        if value == current:
            continue
        following = [on_time_at[i] for i in timely[k:k + confirm]]
        if len(following) == confirm and following.count(value) >= confirm - 2:
            current = value
            if value != before:
                kinds.append(value)
                start_indexes.append(index)
    # Packets late on their way, just before a step of less delay was seen to begin, with at
    # least its delay but less than the step before's, were sent under it already.
    for n, kind in enumerate(kinds):
        previous = kinds[n - 1] if n else before
        floor = start_indexes[n - 1] + 1 if n else 0
        while (previous > kind and start_indexes[n] > floor
               and kind - below <= samples[start_indexes[n] - 1][1] < previous - below):
            start_indexes[n] -= 1
    began = start_indexes[0] if start_indexes else len(samples)
    own = [before] * len(samples)
    for n, index in enumerate(start_indexes):
        end = start_indexes[n + 1] if n + 1 < len(start_indexes) else len(samples)
        own[index:end] = [kinds[n]] * (end - index)
    starts = [samples[i][0] for i in start_indexes]
    offsets = [round(t - starts[0] - n * step_ms, 2) for n, t in enumerate(starts) if n >= 1]
    step_delays = []
    for n, index in enumerate(start_indexes):
        end = start_indexes[n + 1] if n + 1 < len(start_indexes) else len(samples)
        step_delays.append(round(quantile(sorted(delay for _, delay in samples[index:end]), 0.1) - kinds[n], 3))
    deviations = [delay - mine for (_, delay), mine in zip(samples[began:], own[began:])]
    everything = sorted(delay for _, delay in samples)
    interval = (statistics.median(b[0] - a[0] for a, b in zip(samples, samples[1:]))
                if len(samples) > 1 else None)
    return StepsSeen(
        sent=direction.get("sent", 0), received=len(packets), before_play=first, before_first_step=began,
        judged=len(samples) - began, kinds=kinds, starts_ms=starts, offsets_ms=offsets, step_delay_ms=step_delays,
        first_start_gap_ms=(round(samples[began][0] - samples[began - 1][0], 3) if 0 < began < len(samples) else None),
        below_own_step=sum(1 for d in deviations if d < -short),
        most_above_ms=round(max(deviations), 3) if deviations else None,
        packet_interval_ms=round(interval, 3) if interval is not None else None,
        delays_ms=[round(quantile(everything, q), 3) for q in (0.1, 0.5, 0.9)] if everything else [],
    )


def fastest_after(direction: dict, after_ms: float) -> float | None:
    """The least one-way delay (ms) of DIRECTION's packets sent from AFTER_MS on."""
    delays = [(received - sent) / 1e6 for _, sent, received in direction.get("packets", []) if sent / 1e6 >= after_ms]
    return round(min(delays), 3) if delays else None


# ---------------------------------------------------------------- traces

def make_traces(directory: Path, divide: int = 1) -> None:
    """scripts/make-traces into DIRECTORY, its rates divided by DIVIDE."""
    run([SYSTEM_PYTHON, MAKE_TRACES, *(["--divide", str(divide)] if divide != 1 else []), directory]).ok()


def read_trace(path: Path) -> list[int]:
    return [int(line) for line in path.read_text(encoding="ascii").splitlines() if line.strip()]


class LoopingTrace:
    """A looping mahimahi trace's opportunities in any stretch of time, from a running sum over
    one period: an opportunity at the period plays at the same moment as one at 0 of the next
    loop, so it is counted at 0."""

    def __init__(self, timestamps: list[int]):
        self.period = timestamps[-1]
        per_ms = [0] * self.period
        for t in timestamps:
            per_ms[t % self.period] += 1
        self.before = [0]  # before[m]: opportunities in [0, m) of one period
        for count in per_ms:
            self.before.append(self.before[-1] + count)

    def until(self, ms: int) -> int:
        loops, rest = divmod(ms, self.period)
        return loops * self.before[-1] + self.before[rest]

    def between(self, start_ms: int, end_ms: int) -> int:
        return self.until(end_ms) - self.until(start_ms)


@dataclass
class Window:
    from_ms: int
    capacity_bps: int
    delivered_bps: int
    frames: int

    @property
    def error(self) -> float | None:
        return (self.delivered_bps - self.capacity_bps) / self.capacity_bps if self.capacity_bps else None


def trace_windows(trace: LoopingTrace, arrivals_ns: list[int], frame_bytes: int, start_ms: float, seconds: float,
                  width_ms: int = 1000) -> list[Window]:
    """The windows [start + k·width, start + (k+1)·width) within SECONDS of the trace's start:
    the bits delivered in each (frames × frame bytes × 8, what htb counts) against the trace's
    capacity there (opportunities × 12 000 bits)."""
    arrivals = sorted(arrivals_ns)
    start_ns = int(start_ms * 1_000_000)
    result = []
    for k in range(int(seconds * 1000) // width_ms):
        low = start_ns + k * width_ms * 1_000_000
        high = low + width_ms * 1_000_000
        frames = bisect.bisect_left(arrivals, high) - bisect.bisect_left(arrivals, low)
        capacity = trace.between(k * width_ms, (k + 1) * width_ms) * OPPORTUNITY_BITS * 1000 // width_ms
        result.append(Window(k * width_ms, capacity, frames * frame_bytes * 8 * 1000 // width_ms, frames))
    return result


def offered_short(direction: dict, start_ms: float, seconds: float, need_fps: float) -> list[tuple[int, float]]:
    """The seconds of send time, from 1 s before START_MS to SECONDS after it, in which the sender
    of DIRECTION (a `frames_both_ways` result's `up` or `down`) offered fewer than NEED_FPS frames
    a second, by the sequence numbers of the frames that arrived (those dropped at a full queue
    count too): (ms from the start, frames a second offered). A second in which too few arrived
    to tell (an outage's) is left out."""
    packets = sorted((sent / 1e6, seq) for seq, sent, _ in direction.get("packets", []))
    short = []
    for k in range(-1, int(seconds)):
        low, high = start_ms + k * 1000, start_ms + (k + 1) * 1000
        inside = packets[bisect.bisect_left(packets, (low, -1)):bisect.bisect_left(packets, (high, -1))]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] < 300:
            continue
        fps = (inside[-1][1] - inside[0][1]) / ((inside[-1][0] - inside[0][0]) / 1000)
        if fps < need_fps:
            short.append((k * 1000, round(fps)))
    return short


def least_delays(direction: dict, start_ms: float, seconds: float) -> list[float | None]:
    """The least one-way delay (ms) of DIRECTION's frames arriving in each second from START_MS
    on: a shaper whose queue never ran dry keeps every frame waiting behind others."""
    packets = sorted((received / 1e6, (received - sent) / 1e6) for _, sent, received in direction.get("packets", []))
    least = []
    for k in range(int(seconds)):
        low, high = start_ms + k * 1000, start_ms + (k + 1) * 1000
        inside = packets[bisect.bisect_left(packets, (low, -1e18)):bisect.bisect_left(packets, (high, -1e18))]
        least.append(round(min(d for _, d in inside), 1) if inside else None)
    return least


def describe_windows(windows: list[Window]) -> str:
    return " ".join(f"{w.from_ms}:{w.capacity_bps / 1e6:.3f}/{w.delivered_bps / 1e6:.3f}" for w in windows)
