"""One-way delays against a profile's, per direction and family: what most timed checks of shaping
measure. Both namespaces share the VM's clock, so a packet's delay is its send stamp against the
kernel's stamp of its arrival (harness/probe.py oneway); the 10th percentile of a stream, less the
same of an unshaped stream to the same address, is the delay linkcond added."""

from __future__ import annotations

from .checks import Checks, minus
from .probes import Probes
from .system import HarnessError
from .topology import families


def delay_tolerance(delay_ms: float, floor_ms: float = 1.0) -> float:
    """±(FLOOR + 0.5%): under User-mode Linux a netem delay line fires within 0.3 ms of its time (a
    100 ms delay measured 100.05-100.08 ms one way at the 10th percentile, 400 ms of DNS round trip
    400.19-400.28 ms), so a delay 5 ms off fails at every delay the suite uses, 20 ms to 400 ms.
    qemu's timers need a floor of 1.5 ms."""
    return floor_ms + 0.005 * delay_ms


def unshaped_oneway(probes: Probes, host: str, rate: float = 50, duration: float = 2) -> dict[str, float]:
    """The unshaped one-way delay to HOST and back, per direction (10th percentile); HarnessError
    when a packet went missing."""
    measured = probes.oneway(host, rate=rate, duration=duration)
    base = {}
    for direction in ("up", "down"):
        got = measured[direction]
        if got["received"] != got["sent"] or "quantiles_ms" not in got:
            raise HarnessError(f"the unshaped one-way baseline {direction} to {host}: {got['received']} of "
                               f"{got['sent']} arrived")
        base[direction] = got["quantiles_ms"]["0.1"]
    return base


def unshaped_families(probes: Probes, v4: str, v6: str) -> dict[tuple[str, str], float]:
    """`unshaped_oneway` for both of a target's addresses, by (family, direction)."""
    base = {}
    for family, host in families(v4, v6):
        for direction, delay in unshaped_oneway(probes, host).items():
            base[family, direction] = delay
    return base


def oneway_checks(check: Checks, probes: Probes, name: str, v4: str, v6: str, base: dict, up_ms: float,
                  down_ms: float, rate: float = 20, duration: float = 3) -> None:
    """4 checks per family: in each direction every packet arrived, and its one-way delay (10th
    percentile, less the unshaped one) is the profile's."""
    for family, host in families(v4, v6):
        measured = probes.oneway(host, rate=rate, duration=duration)
        for direction, delay in (("up", up_ms), ("down", down_ms)):
            got = measured[direction]
            check.equal(f"{name}: {family} {direction}, every packet arrived", got["sent"], got["received"])
            added = minus(got.get("quantiles_ms", {}).get("0.1"), base[family, direction])
            check.near(f"{name}: {family} {direction} one-way delay", added, delay, delay_tolerance(delay))
