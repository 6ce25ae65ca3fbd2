"""Impairments read packet by packet: a stream of numbered, timestamped datagrams (`Probes.stream`)
turned into what a profile's netem promises (losses and their bursts, duplicates, corrupted
packets, packets that skipped the delay, arrival inversions, one-way delays), and the figures
the kernel's netem should give (its jitter tables' quantiles, its in-order delay line, the
share of corrupted packets a receiver notices).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from statistics import fmean

from .checks import quantile
from .probes import Probes

#: Ethernet, UDP and the stamp (probe.py's TSEG) in front of a stream packet's pad.
ETHERNET, UDP, STAMP = 14, 8, 24
IP_HEADER = {"IPv4": 20, "IPv6": 40}


def frame_bytes(family: str, pad: int = 32) -> int:
    """A stream packet's frame on the wire (no FCS): 98 bytes IPv4, 118 IPv6 with the default pad."""
    return ETHERNET + IP_HEADER[family] + UDP + STAMP + pad


@dataclass
class Stream:
    """One direction of a stream as it arrived."""

    direction: str
    sent: int
    #: (sequence number, sent at in ms, one-way delay in ms), in the order the receiving socket
    #: gave them (one clock: the VM's CLOCK_MONOTONIC).
    arrivals: list[tuple[int, float, float]]
    #: Packets that arrived with their pad changed (a flipped bit no checksum caught).
    altered: int | None
    #: Sends the sender's kernel refused (counted as sent).
    refused: int | None = None
    #: What the two namespaces' IP and UDP stacks dropped meanwhile (both directions' streams).
    stack_drops: dict[str, int] = field(default_factory=dict)
    first_delay: dict[int, float] = field(init=False)

    def __post_init__(self):
        self.first_delay = {}
        for seq, _, delay in self.arrivals:
            self.first_delay.setdefault(seq, delay)

    @property
    def received(self) -> int:
        """Distinct packets that arrived, of those sent."""
        return sum(1 for seq in self.first_delay if 0 <= seq < self.sent)

    @property
    def duplicates(self) -> int:
        return len(self.arrivals) - len(self.first_delay)

    @property
    def loss_runs(self) -> list[int]:
        """The lengths of the runs of sequence numbers that never arrived."""
        runs, run = [], 0
        for seq in range(self.sent):
            if seq in self.first_delay:
                if run:
                    runs.append(run)
                run = 0
            else:
                run += 1
        if run:
            runs.append(run)
        return runs

    @property
    def lost(self) -> int:
        return self.sent - self.received

    @property
    def inversions(self) -> int:
        """Arrivals whose sequence number is below the one arrived just before."""
        order = [seq for seq, _, _ in self.arrivals]
        return sum(1 for i in range(1, len(order)) if order[i] < order[i - 1])

    def losses(self) -> str:
        """Where the losses were, for a check's record: their runs, the longest, the tail, and
        what else dropped packets meanwhile."""
        runs = self.loss_runs
        if not runs:
            return "none lost"
        tail = runs[-1] if self.sent - 1 not in self.first_delay else 0
        return (f"{sum(runs)} lost in {len(runs)} runs, longest {max(runs)}, at the end {tail}; sends refused "
                f"{self.refused}; the stacks dropped {self.stack_drops or 'nothing'}")

    def delays(self) -> list[float]:
        """Each packet's one-way delay (its first copy), sorted."""
        return sorted(self.first_delay.values())

    def fast(self, below_ms: float) -> int:
        """Packets that took less than BELOW_MS: sent without the delay."""
        return sum(1 for d in self.first_delay.values() if d < below_ms)

    def overtaking(self, below_ms: float, delay_ms: float) -> tuple[int, int]:
        """Of the packets sent at once (arrived within BELOW_MS), those that found an earlier
        packet still in the delay line when they arrived (sent less than DELAY_MS before: netem
        never sends early, so it arrived later), and of these, those that the receiving socket
        gave ahead of every such packet."""
        position = {}
        sent_at = {}
        for index, (seq, sent, delay) in enumerate(self.arrivals):
            position.setdefault(seq, index)
            sent_at.setdefault(seq, sent)
        with_company = ahead = 0
        for k, delay in self.first_delay.items():
            if delay >= below_ms:
                continue
            arrived = sent_at[k] + delay
            behind = [j for j in range(k - 1, -1, -1) if j in sent_at and self.first_delay[j] >= below_ms
                      and sent_at[j] + delay_ms > arrived]
            if behind:
                with_company += 1
                ahead += all(position[j] > position[k] for j in behind)
        return with_company, ahead

    def quantile(self, q: float, leaving_out: set[int] = frozenset()) -> float | None:
        """The one-way delay's quantile Q, the packets LEAVING_OUT left out."""
        return quantile(sorted(d for seq, d in self.first_delay.items() if seq not in leaving_out), q)

    def held_up(self, within_ms: float = 0.05, together: int = 3) -> set[int]:
        """The packets that arrived in a bunch of TOGETHER or more within WITHIN_MS of each other:
        those the VM held while it was stopped (its host busy), released at once when it went on.
        Under jitter at a few hundred packets a second, three arrive within 50 µs about once a
        minute otherwise. Which packets fall due while the VM stands still does not depend on
        their delays, so that leaving them out leaves the delays' distribution as it was."""
        arrived = sorted((sent + delay, seq) for seq, sent, delay in self.arrivals)
        bunches, bunch = [], arrived[:1]
        for previous, current in zip(arrived, arrived[1:]):
            if current[0] - previous[0] <= within_ms:
                bunch.append(current)
            else:
                bunches.append(bunch)
                bunch = [current]
        bunches.append(bunch)
        return {seq for b in bunches if len(b) >= together for _, seq in b}

    def link_rate(self, frame_bits: int, after_ms: float = 1000) -> float | None:
        """The rate in bit/s at which a saturated link delivered FRAME_BITS frames: FRAME_BITS over
        the median gap between arrivals, from AFTER_MS past the first (once a flood has filled
        the queue). The median: a sender the busy VM held up leaves the link idle a moment, and
        the link then sends its bucket's few frames back to back; neither is its rate."""
        arrived = sorted(sent + delay for _, sent, delay in self.arrivals)
        arrived = [t for t in arrived if t >= arrived[0] + after_ms] if arrived else []
        gaps = sorted(b - a for a, b in zip(arrived, arrived[1:]))
        if not gaps or gaps[len(gaps) // 2] <= 0:
            return None
        return frame_bits / (gaps[len(gaps) // 2] / 1000)

    def send_times_ms(self) -> list[float]:
        """When each received packet was sent, in sequence order."""
        return sorted({seq: sent for seq, sent, _ in self.arrivals}.values())


def streams(probes: Probes, host: str, direction: str = "both", count: int = 3000, rate: float = 500,
            **options) -> dict[str, Stream]:
    """COUNT packets at RATE a second each way asked (fewer when the sender was held up: it does
    not catch up in a burst, unless OPTIONS' catch_up says so; every figure is judged against what
    was sent). OPTIONS: probe.py stream's (pad, catch_up, grace)."""
    options = {"grace": 2} | options
    before = _stack_drops(probes)
    doc = probes.stream(host, direction, rate=rate, duration=round(count / rate, 1), **options)
    after = _stack_drops(probes)
    dropped = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    out = {}
    for d in (("up", "down") if direction == "both" else (direction,)):
        part = doc[d]
        packets = part["packets"]
        out[d] = Stream(d, part["sent"], [(seq, sent / 1e6, (received - sent) / 1e6) for seq, sent, received in packets],
                        part.get("altered", part.get("corrupted")), part.get("send_refused"), dropped)
    return out


_DROP_COUNTERS = {"Ip": ("InDiscards", "InHdrErrors", "InAddrErrors"), "Udp": ("InErrors", "RcvbufErrors", "NoPorts")}
_DROP_COUNTERS6 = ("Ip6InDiscards", "Ip6InHdrErrors", "Ip6InAddrErrors", "Udp6InErrors", "Udp6RcvbufErrors", "Udp6NoPorts")


def _stack_drops(probes: Probes) -> dict[str, int]:
    """The drop counters of the client's and server's IP and UDP stacks."""
    counters = {}
    for side, ns in (("client", probes.namespace), ("server", probes.server.namespace)):
        rows = [line.split() for line in ns.proc_net("snmp").splitlines()]
        for names, values in zip(rows[::2], rows[1::2]):
            for name in _DROP_COUNTERS.get(names[0].rstrip(":"), ()):
                counters[f"{side} {names[0]}{name}"] = int(values[names.index(name)])
        for line in ns.proc_net("snmp6").splitlines():
            key, _, value = line.partition(" ")
            if key in _DROP_COUNTERS6:
                counters[f"{side} {key}"] = int(value)
    return counters


# ---------------------------------------------------------------- corruption

def corruption_noticed(family: str, direction: str, pad: int = 32) -> float:
    """The share of netem's bit flips in a stream packet that its receiver notices (drops it, or
    finds its pad changed).

    netem flips one bit anywhere in the frame from its Ethernet header on, after computing the
    UDP checksum (skb_checksum_help), so that a flip in the IP header (IPv4's checksum), the UDP
    header or payload (UDP's checksum) drops the packet, as does one in the version, length or
    next-header fields, the addresses or the EtherType. What nobody checks:
    - on the downlink (the IFB), the whole Ethernet header: the stack read it before the
      redirect put it back for the IFB's netem;
    - on the uplink (the interface's egress), the source MAC (48 bits) and the destination's
      group bit (1: the frame then counts as multicast, which IP still takes); any other flip in
      the destination MAC makes the frame another host's, which the server drops;
    - over IPv6, the traffic class and flow label (28 bits) and the hop limit (8: a packet
      delivered locally never has it checked), which no checksum covers.
    """
    bits = frame_bytes(family, pad) * 8
    unchecked = ETHERNET * 8 if direction == "down" else 48 + 1
    if family == "IPv6":
        unchecked += 28 + 8
    return (bits - unchecked) / bits


# ---------------------------------------------------------------- burst loss

def burst_loss_bounds(sent: int, average: float, length: float, z: float) -> dict[str, tuple[float, float]]:
    """The share lost and the mean burst length of netem's Gilbert-Elliott loss with every packet
    in a burst lost and none between, within Z standard deviations.

    The loss indicator is a two-state Markov chain entering a burst with p = r a / (1 - a) and
    leaving it with r = 1 / length: the variance of its mean is the binomial one times
    (1 + l) / (1 - l), l = 1 - p - r. Burst lengths are geometric, mean 1/r, standard deviation
    sqrt(1 - r) / r, over the bursts SENT x average / length packets hold on average."""
    r = 1 / length
    p = r * average / (1 - average)
    l = 1 - p - r
    share_sd = math.sqrt(average * (1 - average) / max(sent, 1) * (1 + l) / (1 - l))
    burst_sd = math.sqrt(1 - r) / r / math.sqrt(max(sent * average / length, 1))
    return {"share": (average - z * share_sd, average + z * share_sd),
            "burst": (length - z * burst_sd, length + z * burst_sd)}


# ---------------------------------------------------------------- jitter

TABLE_SIZE = 4096
TABLE_SCALE = 8192


def normal_quantile(p: float) -> float:
    low, high = -10.0, 10.0
    for _ in range(60):
        middle = (low + high) / 2
        if 0.5 * (1 + math.erf(middle / math.sqrt(2))) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def pareto_value(p: float) -> float:
    return ((1 - p) ** (-1 / 3) - 1.5) * 4 / 3


SHAPES = {
    "uniform": lambda p: -1 + 2 * p,
    "normal": normal_quantile,
    "pareto": pareto_value,
    "paretonormal": lambda p: (normal_quantile(p) + 3 * pareto_value(p)) / 4,
}


def table(distribution: str) -> list[float]:
    """netem's table for DISTRIBUTION as linkcond computes it (Sources/Shaping/
    NetemDistributionTable.swift, iproute2's way): 4096 values of the inverse function at the
    middle of each slice, in units of 1/8192 of the jitter, clamped to 16 bits; returned in
    units of the jitter."""
    shape = SHAPES[distribution]
    values = []
    for index in range(TABLE_SIZE):
        raw = round(shape((index + 0.5) / TABLE_SIZE) * TABLE_SCALE)
        values.append(min(max(raw, -32768), 32767) / TABLE_SCALE)
    return values


def jitter_quantile(distribution: str, delay: float, jitter: float, q: float) -> float:
    """The delay's quantile Q under netem's table: delay + jitter x the table's quantile Q (each
    packet draws a table value at random)."""
    return delay + jitter * quantile(table(distribution), q)


def jitter_quantile_error(distribution: str, jitter: float, q: float, n: int) -> float:
    """One standard error of the sample quantile Q of N delays: sqrt(q(1-q)/N) times the slope
    of the quantile function there (the inverse of the density)."""
    step = 0.005
    slope = (SHAPES[distribution](q + step) - SHAPES[distribution](q - step)) / (2 * step)
    return jitter * slope * math.sqrt(q * (1 - q) / max(n, 1))


def in_order_quantiles(send_ms: list[float], delay: float, jitter: float, distribution: str, qs: tuple[float, ...],
                       runs: int = 40, seed: int = 1) -> dict[float, tuple[float, float, float]]:
    """The delay quantiles of netem's in-order line (keep-order: netem with a rate) for packets
    sent at SEND_MS: each packet leaves at its own time or right behind the one before it,
    whichever is later (netem_enqueue with a rate: `delay -= last->time_to_send - now`, at
    least 0). Simulated RUNS times with the same table draws netem makes: per Q, the mean over
    the runs and the lowest and highest."""
    values = table(distribution)
    rng = random.Random(seed)
    found: dict[float, list[float]] = {q: [] for q in qs}
    for _ in range(runs):
        leave = -math.inf
        delays = []
        for t in send_ms:
            leave = max(t + max(delay + jitter * rng.choice(values), 0.0), leave)
            delays.append(leave - t)
        delays.sort()
        for q in qs:
            found[q].append(quantile(delays, q))
    return {q: (fmean(v), min(v), max(v)) for q, v in found.items()}
