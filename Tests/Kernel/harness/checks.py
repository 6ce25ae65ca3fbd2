"""Checks: a measured value against what linkcond promises, with the tolerance said.

A test makes its checks through the `check` fixture. Each check is recorded with its measured
value, expectation and tolerance (in the test's output, the JUnit report's properties and the
run's checks log), and a failed one does not stop the test: the test fails at its end with every
failed check listed. A measurement that is missing (None) fails its check, saying so.

Every test states how many checks it makes (`@pytest.mark.checks(N)`) and every module the sum
(`CHECKS = N`): a test that made fewer fails, and a run in which fewer ran says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.0f}"
    text = str(value).replace("\n", " / ")
    return text if len(text) <= 160 else text[:157] + "..."


@dataclass
class Outcome:
    name: str
    passed: bool
    measured: str
    expected: str
    tolerance: str

    def line(self) -> str:
        return (f"{'PASS' if self.passed else 'FAIL'}  {self.name}: measured {self.measured}, "
                f"expected {self.expected} (tolerance {self.tolerance})")


class CheckFailed(AssertionError):
    """A check that the test cannot go on without (`require=True`) failed."""


class Checks:
    """The checks of one test, in order."""

    def __init__(self, test_id: str):
        self.test_id = test_id
        self.outcomes: list[Outcome] = []
        self.listeners: list = []
        self.quiet = False
        self.remark = ""

    # ---------------------------------------------------------------- the one primitive

    def record(self, name: str, passed: bool, measured: Any, expected: Any, tolerance: str = "exact", *,
               require: bool = False) -> bool:
        outcome = Outcome(name, bool(passed), _shown(measured), _shown(expected), tolerance + self.remark)
        self.outcomes.append(outcome)
        if not self.quiet:
            print(outcome.line(), flush=True)
        for listener in self.listeners:
            listener(self.test_id, outcome)
        if require and not outcome.passed:
            raise CheckFailed(outcome.line())
        return outcome.passed

    # ---------------------------------------------------------------- kinds of check

    def equal(self, name: str, expected: Any, measured: Any, **kw) -> bool:
        return self.record(name, measured is not None and measured == expected, measured, expected, **kw)

    def true(self, name: str, condition: bool, measured: Any, expected: Any, **kw) -> bool:
        """CONDITION, computed by the test, with what was measured and promised for the record."""
        return self.record(name, condition, measured, expected, **kw)

    def near(self, name: str, measured: float | None, expected: float, tolerance: float, unit: str = "ms",
             why: str = "", **kw) -> bool:
        """|MEASURED - EXPECTED| <= TOLERANCE."""
        ok = _number(measured) and abs(measured - expected) <= tolerance
        return self.record(name, ok, _with_unit(measured, unit), _with_unit(expected, unit),
                           f"±{_shown(tolerance)} {unit}{_why(why)}", **kw)

    def between(self, name: str, measured: float | None, low: float, high: float, unit: str = "",
                promised: Any = None, why: str = "", **kw) -> bool:
        """LOW <= MEASURED <= HIGH."""
        ok = _number(measured) and low <= measured <= high
        return self.record(name, ok, _with_unit(measured, unit),
                           promised if promised is not None else f"{_shown(low)}..{_shown(high)} {unit}".strip(),
                           f"[{_shown(low)}, {_shown(high)}] {unit}{_why(why)}".strip(), **kw)

    def relative(self, name: str, measured: float | None, expected: float, fraction: float, unit: str = "",
                 why: str = "", **kw) -> bool:
        """MEASURED within ±FRACTION of EXPECTED."""
        low, high = expected * (1 - fraction), expected * (1 + fraction)
        ok = _number(measured) and low <= measured <= high
        return self.record(name, ok, _with_unit(measured, unit), _with_unit(expected, unit),
                           f"±{fraction * 100:g}% [{_shown(low)}, {_shown(high)}]{_why(why)}", **kw)

    def at_most(self, name: str, measured: float | None, limit: float, unit: str = "", promised: Any = None,
                why: str = "", **kw) -> bool:
        ok = _number(measured) and measured <= limit
        return self.record(name, ok, _with_unit(measured, unit), promised if promised is not None else f"<= {_shown(limit)} {unit}",
                           f"<= {_shown(limit)} {unit}{_why(why)}".strip(), **kw)

    def at_least(self, name: str, measured: float | None, limit: float, unit: str = "", promised: Any = None,
                 why: str = "", **kw) -> bool:
        ok = _number(measured) and measured >= limit
        return self.record(name, ok, _with_unit(measured, unit), promised if promised is not None else f">= {_shown(limit)} {unit}",
                           f">= {_shown(limit)} {unit}{_why(why)}".strip(), **kw)

    def contains(self, name: str, text: str | None, needle: str, **kw) -> bool:
        """NEEDLE in TEXT, ignoring case."""
        ok = text is not None and needle.lower() in text.lower()
        return self.record(name, ok, f'"{(text or "").strip()}"' if text is not None else None,
                           f"mentions '{needle}'", "substring", **kw)

    def absent(self, name: str, text: str | None, needle: str, **kw) -> bool:
        """NEEDLE not in TEXT (which must have been read)."""
        ok = text is not None and needle.lower() not in text.lower()
        return self.record(name, ok, f'"{(text or "").strip()}"' if text is not None else None,
                           f"no '{needle}'", "substring absent", **kw)

    def exit_status(self, name: str, result, expected: int | str, **kw) -> bool:
        """A command's exit status: a number, or "nonzero" (a failure, not a time-out)."""
        rc = result.rc
        ok = rc == expected if isinstance(expected, int) else rc not in (0, 124)
        detail = f"exit {rc}" + ("" if ok else f" ({' / '.join(result.output.strip().splitlines()[-2:])})")
        return self.record(name, ok, detail, f"exit {expected}" if isinstance(expected, int) else "exit != 0", **kw)

    # ---------------------------------------------------------------- a measurement taken twice

    def judged_once_more(self, measure: Callable[[], T], judge: Callable[[Checks, T], None]) -> T:
        """A timed measurement on a VM that its host may hold up: JUDGE the first one aside, and if
        any of its checks failed, MEASURE once more and judge that one for the record, the first
        one's failures printed before it. A fault in the link fails both: only a disturbance
        that comes and goes (the host busy with another job) passes the second. The record's
        checks are the second measurement's, so a test states the same count either way."""
        first = measure()
        trial = Checks(self.test_id)
        trial.quiet = True
        judge(trial, first)
        if not trial.failed:
            for outcome in trial.outcomes:
                self.record(outcome.name, True, outcome.measured, outcome.expected, outcome.tolerance)
            return first
        for outcome in trial.failed:
            print(f"MEASURED AGAIN after  {outcome.line()}", flush=True)
        second = measure()
        self.remark = f"; measured twice, the first failed {len(trial.failed)} of {trial.count}"
        try:
            judge(self, second)
        finally:
            self.remark = ""
        return second

    # ---------------------------------------------------------------- the test's end

    @property
    def count(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _with_unit(value: Any, unit: str) -> str | None:
    if value is None:
        return None
    return f"{_shown(value)} {unit}".strip()


def _why(why: str) -> str:
    return f"; {why}" if why else ""


# ---------------------------------------------------------------- statistics for tolerances

def binomial_interval(n: int, p: float, z: float) -> tuple[int, int]:
    """The counts of successes in N trials of probability P within Z standard deviations."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    return max(0, math.ceil(mean - z * sd)), math.floor(mean + z * sd)


def quantile(values: Iterable[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def minus(a: float | None, b: float | None) -> float | None:
    """A - B, or None when either is missing."""
    return None if a is None or b is None else a - b
