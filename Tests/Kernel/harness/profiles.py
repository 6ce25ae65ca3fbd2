"""The profiles the suite measures against: the shipped ones, and test profiles whose numbers no
shipped profile has, chosen so that a fault cannot pass for the promise.

Delays differ per direction (40 ms up, 60 ms down, say) so that a direction doubled, swapped or
missing changes what a one-way or round-trip measurement sees by far more than its tolerance;
profiles used side by side have delays that differ from each other, so that traffic shaped by
the wrong condition shows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .system import SHIPPED_PROFILES, SHIPPED_SCENARIOS

TEST_PROFILES = {
    # Pure delay, different per direction.
    "lc-test-a.yaml": "name: LC Test A\nuplink: { delay: 40ms }\ndownlink: { delay: 60ms }\n",
    # A second pure-delay profile beside A: its smallest delay (20 ms) is the smallest a scoped
    # check measures, and no sum of A's and B's delays equals another.
    "lc-test-b.yaml": "name: LC Test B\nuplink: { delay: 20ms }\ndownlink: { delay: 35ms }\n",
    # Jitter to measure: uniform within delay ± jitter.
    "lc-test-jitter.yaml": "name: LC Test Jitter\nuplink: { delay: 50ms, jitter: 20ms }\n"
                           "downlink: { delay: 30ms, jitter: 10ms }\n",
    # Values no display text rounds: they must come back bit for bit after a restart.
    "lc-test-exact.yaml": "name: LC Test Exact\n"
                          "downlink: { bandwidth: 1.2345Mbit, delay: 12.345ms, loss: 0.0004% }\n"
                          "uplink: { bandwidth: 777.777kbit, delay: 3.21ms, jitter: 1.234ms, loss: 33.3333333333% }\n"
                          "dns: { delay: 1.5ms }\n",
    # A fixed rate, different per direction, with a delay of each direction's own.
    "lc-test-rate.yaml": "name: LC Test Rate\ndownlink: { bandwidth: 2Mbit, delay: 25ms }\n"
                         "uplink: { bandwidth: 500kbit, delay: 15ms }\n",
    # Loss per direction, different each way.
    "lc-test-loss.yaml": "name: LC Test Loss\nuplink: { loss: 20% }\ndownlink: { loss: 40% }\n",
    # For the counters: everything up dropped by loss; a rate so low that a burst fills the queue
    # and drains for seconds.
    "lc-test-drop.yaml": "name: LC Test Drop\nuplink: { loss: 100% }\ndownlink: { delay: 20ms }\n",
    "lc-test-queue.yaml": "name: LC Test Queue\nuplink: { bandwidth: 4kbit }\n",
}


def profile_directory(path: Path, extra: dict[str, str] | None = None) -> Path:
    """PATH holding the shipped profiles, the test profiles and EXTRA (file name -> YAML)."""
    path.mkdir(parents=True, exist_ok=True)
    for shipped in SHIPPED_PROFILES.glob("*.yaml"):
        shutil.copy(shipped, path / shipped.name)
    for name, text in {**TEST_PROFILES, **(extra or {})}.items():
        (path / name).write_text(text)
    return path


def write_profile(directory: Path, name: str, body: str) -> Path:
    """The profile NAME with BODY's lines, in a file named after it (lower case, dashes)."""
    path = directory / (name.lower().replace(" ", "-") + ".yaml")
    path.write_text(f"name: {name}\n{body.rstrip()}\n")
    return path


def scenario_directory(profiles: Path) -> Path:
    """The scenarios directory the daemon reads beside the profile directory PROFILES, holding
    the shipped scenarios: GET /v1/scenarios then lists them, and one can be played."""
    path = profiles.parent / "scenarios"
    path.mkdir(parents=True, exist_ok=True)
    for shipped in SHIPPED_SCENARIOS.glob("*.yaml"):
        shutil.copy(shipped, path / shipped.name)
    return path
