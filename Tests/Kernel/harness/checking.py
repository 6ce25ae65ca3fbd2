"""pytest plugin: the `check` fixture, and the stated number of checks kept.

* `@pytest.mark.checks(N)` on every test, `CHECKS = N` in every module (their sum): a module
  whose statement does not add up is refused at collection.
* A test that made other than its N checks fails, saying how many ran; its failed checks are
  listed in its failure.
* At the end, a table says per module how many checks ran of those stated for the tests run,
  and which tests did not run theirs; any such test fails the run.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from .checks import Checks, Outcome

CHECKS_PROPERTY = "linkcond-checks"


def pytest_configure(config):
    config.addinivalue_line("markers", "checks(n): the number of checks the test makes")
    config.addinivalue_line("markers", "timed: a timed measurement; runs in the timed phase, alone on its CPU")
    config.addinivalue_line("markers", "debian_kernel: needs Debian's own kernel (qemu), not User-mode Linux")
    config.pluginmanager.register(CheckLedger(config), "linkcond-check-ledger")


def stated_checks(item) -> int | None:
    marker = item.get_closest_marker("checks")
    return int(marker.args[0]) if marker and marker.args else None


def module_statement(module) -> tuple[int | None, int, list[str]]:
    """A module's `CHECKS`, the sum its tests state (each test's N times its parametrized cases,
    whichever of them a run selects), and the tests that state nothing."""
    total, unstated = 0, []
    for name, function in vars(module).items():
        if not name.startswith("test") or not callable(function):
            continue
        marks = getattr(function, "pytestmark", [])
        stated = [m for m in marks if m.name == "checks" and m.args]
        if not stated:
            unstated.append(name)
            continue
        cases = 1
        for mark in marks:
            if mark.name == "parametrize":
                cases *= len(mark.args[1])
        total += int(stated[0].args[0]) * cases
    return getattr(module, "CHECKS", None), total, unstated


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Every test states its checks, every module their sum."""
    problems = []
    for module in {item.module for item in items}:
        declared, total, unstated = module_statement(module)
        if unstated:
            problems.append(f"{module.__name__}: no @pytest.mark.checks(N) on {', '.join(unstated)}")
        elif declared != total:
            problems.append(f"{module.__name__}: CHECKS = {declared}, but its tests state {total}")
    if problems:
        raise pytest.UsageError("the checks the suite states do not add up:\n  " + "\n  ".join(sorted(problems)))


@pytest.fixture
def check(request) -> Checks:
    """The test's checks (see harness/checks.py)."""
    checks = Checks(request.node.nodeid)
    ledger = request.config.pluginmanager.get_plugin("linkcond-check-ledger")
    checks.listeners.append(ledger.log_outcome)
    request.node.linkcond_checks = checks
    return checks


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test's call fails when one of its checks failed, or when it made other than the checks
    it states; its report carries the count it made."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call":
        return
    checks: Checks | None = getattr(item, "linkcond_checks", None)
    made = checks.count if checks else 0
    stated = stated_checks(item)
    # On the item too: the JUnit report takes a test's properties from its teardown report.
    properties = [(CHECKS_PROPERTY, f"{made}/{stated}")] + [(o.name, o.line()) for o in (checks.outcomes if checks else [])]
    report.user_properties.extend(properties)
    item.user_properties.extend(properties)
    problems = []
    if checks and checks.failed:
        problems.append(f"{len(checks.failed)} of {checks.count} checks failed:\n" +
                        "\n".join("  " + o.line() for o in checks.failed))
    if report.passed and stated is not None and made != stated:
        problems.append(f"made {made} checks, states {stated}: "
                        + ("fewer ran than it promises" if made < stated else "update @pytest.mark.checks"))
    if problems and report.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(problems)
    elif problems and report.failed:
        report.longrepr = f"{report.longrepr}\n\n" + "\n".join(problems)


class CheckLedger:
    """Counts the checks each test reported (locally or from a VM) against what it states, and
    keeps every check's line in the run's checks log (LC_CHECKS_LOG) as it is made, so that a
    run cut short still says what had passed."""

    def __init__(self, config):
        self.config = config
        self.stated: dict[str, int] = {}
        self.module_of: dict[str, str] = {}
        self.made: dict[str, int] = {}
        self.log_path = os.environ.get("LC_CHECKS_LOG")
        self.session = None

    def pytest_sessionstart(self, session):
        self.session = session

    def log_outcome(self, test_id: str, outcome: Outcome) -> None:
        if self.log_path:
            with open(self.log_path, "a") as log:
                log.write(f"{test_id}\t{outcome.line()}\n")
                log.flush()
                os.fsync(log.fileno())

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            self.stated[item.nodeid] = stated_checks(item) or 0
            self.module_of[item.nodeid] = item.nodeid.split("::")[0]

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == CHECKS_PROPERTY:
                self.made[report.nodeid] = int(str(value).split("/")[0])

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if not self.stated or config.option.collectonly:
            return
        modules = defaultdict(lambda: [0, 0, []])
        for nodeid, stated in self.stated.items():
            row = modules[self.module_of[nodeid]]
            made = self.made.get(nodeid, 0)
            row[0] += made
            row[1] += stated
            if made < stated:
                row[2].append(f"{nodeid.split('::', 1)[1]} ({made} of {stated})")
        terminalreporter.section("checks run, per module")
        short = False
        for module, (made, stated, missing) in sorted(modules.items()):
            terminalreporter.write_line(f"{Path(module).name:<34} {made:>5} of {stated:>5} stated")
            if missing:
                short = True
                terminalreporter.write_line("    fewer than stated: " + "; ".join(missing), red=True)
        total_made = sum(m for m, _, _ in modules.values())
        total_stated = sum(s for _, s, _ in modules.values())
        terminalreporter.write_line(f"{'all':<34} {total_made:>5} of {total_stated:>5} stated", bold=True)
        if short and self.session is not None:
            self.session.exitstatus = pytest.ExitCode.TESTS_FAILED
