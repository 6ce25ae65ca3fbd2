"""The documentation's examples, run as written (harness/examples.py), on a machine set up the
way the README's quick start expects: systemd as init, linkcond installed by the quick start
itself, the default route on an interface named eth0, example.com a web server beyond it.

First the quick start alone, from a bare machine (nothing of linkcond, no group, no units). Then
each page's runnable blocks, in order, one test per page: every block found runs, and the count
run is the count found. No page may hold a shell-like block that the runner does not run unless
it says why (`<!-- example: skip (REASON) -->`): an example that silently stopped being run
fails. Last, Examples/swift-testing's XCTest and Swift Testing tests (built on the host, with
the host's toolchain and caches) against the daemon the quick start installed.

The pages are read on the host at collection: a page added to docs/ changes CHECKS.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness import examples
from harness.api import ControlAPI
from harness.system import REPO, HarnessError, run, spawn, stop, wait_until
from harness.systemd import CONTROL_SOCKET, PREFIX, SOCKET, bare_machine, build_is_current, require_systemd, systemctl

VM = "systemd"
#: Built on the host first (Examples/swift-testing's test bundle): make test builds it beside the functional phase.
HOST_BUILDS = ("swift-example",)

PAGES = examples.pages()
RUNNABLE_PAGES = [page for page in PAGES if examples.runnable(page)]
QUICK_START = "Quick start"
# One per page, two per page with examples, three for the quick start, four for the Swift example.
CHECKS = 31

WWW = "lc-www"
#: Built into this checkout's own build directory (`--scratch-path .build`), where it shares the
#: unit tests' build of swift-nio and the client library instead of compiling them a second time.
SWIFT_EXAMPLE = REPO / ".build" / "debug" / "PageLoadExamplePackageTests.xctest"
BUILD_SWIFT_EXAMPLE = "swift build --build-tests --package-path Examples/swift-testing --scratch-path .build"
#: The time one command of a page may take.
COMMAND_LIMIT = 120


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


@pytest.fixture(scope="module")
def world(work):
    """The world beyond eth0: a namespace with example.com's web server (IPv4 and IPv6), reached
    through the default route, and a second link to it (eth1) for the pages' conditions on
    another interface. Nothing here leaves the VM. The README's commands say sudo: this
    machine's root needs none, and gets a sudo that runs the command."""
    require_systemd()
    run(["modprobe", "-a", "veth", "sch_netem", "sch_htb", "sch_ingress", "ifb", "cls_u32", "cls_flower", "act_mirred"])
    for device in ("eth0", "eth1"):
        run(["ip", "link", "del", device])
    run(["ip", "netns", "del", WWW])
    run(["ip", "netns", "add", WWW]).ok()
    for device, peer, v4, v6 in (("eth0", "www0", "10.88.0", "fd88"), ("eth1", "www1", "10.89.0", None)):
        run(["ip", "link", "add", device, "type", "veth", "peer", "name", peer, "netns", WWW]).ok()
        run(["ip", "addr", "add", f"{v4}.1/24", "dev", device]).ok()
        run(["ip", "-n", WWW, "addr", "add", f"{v4}.2/24", "dev", peer]).ok()
        if v6:
            run(["ip", "addr", "add", f"{v6}::1/64", "dev", device, "nodad"]).ok()
            run(["ip", "-n", WWW, "addr", "add", f"{v6}::2/64", "dev", peer, "nodad"]).ok()
        run(["ip", "link", "set", device, "up"]).ok()
        run(["ip", "-n", WWW, "link", "set", peer, "up"]).ok()
    run(["ip", "-n", WWW, "link", "set", "lo", "up"]).ok()
    run(["ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off"])
    run(["ip", "route", "replace", "default", "via", "10.88.0.2", "dev", "eth0"]).ok()
    run(["ip", "-6", "route", "replace", "default", "via", "fd88::2", "dev", "eth0"]).ok()
    hosts = Path("/etc/hosts")
    hosts.write_text(hosts.read_text() + "10.88.0.2 example.com\nfd88::2 example.com\n")
    site = work / "www"
    site.mkdir(exist_ok=True)
    (site / "index.html").write_text("<html><body>example</body></html>\n")
    server = spawn(["ip", "netns", "exec", WWW, "python3", "-m", "http.server", "80", "--bind", "::",
                    "--directory", site])
    if not wait_until(lambda: run(["curl", "-s", "-o", "/dev/null", "--max-time", "2", "http://example.com/"]).rc == 0,
                      60, 0.2):
        raise HarnessError("example.com's web server did not answer")
    if run(["sh", "-c", "command -v sudo"]).rc != 0:
        sudo = Path("/usr/local/bin/sudo")
        sudo.write_text('#!/bin/sh\nexec "$@"\n')
        sudo.chmod(0o755)
    yield
    systemctl("stop", SOCKET, "linkcondd.service")
    stop(server)
    run(["ip", "netns", "del", WWW])
    for device in ("eth0", "eth1"):
        run(["ip", "link", "del", device])


def environment() -> dict[str, str]:
    """The pages' commands' environment. docs/ci.md's pytest example runs with the Python of
    scripts/setup's environment, which has pytest; without the plugins installed beside it for
    the suite's own use (schemathesis, hypothesis): a user's pytest has none, and importing them
    takes seconds."""
    env = dict(os.environ)
    env["PATH"] = f"{REPO / '.build' / 'venv' / 'bin'}:{env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def installed() -> bool:
    return Path(PREFIX, "bin", "linkcond").exists() and systemctl("is-enabled", SOCKET).out.strip() == "enabled"


@pytest.fixture
def quick_started(world) -> None:
    """linkcond installed as the quick start installs it (by its own blocks, when a test before
    did not), listening, with every condition off."""
    if not installed():
        build_is_current()
        # The quick start's first block installs; the next tries it.
        outcome = examples.run_blocks(examples.runnable(REPO / "README.md", QUICK_START)[:1], COMMAND_LIMIT,
                                      environment())
        if outcome.failures or not installed():
            raise HarnessError(f"the quick start's installation failed: {outcome.failures}")
    api = ControlAPI(CONTROL_SOCKET, timeout=120)
    api.must(api.request("DELETE", "/v1/conditions?force=1"))


def ran_every_block(check, name: str, outcome: examples.Outcome, found: list[examples.Block]) -> None:
    check.true(f"{name}: every runnable block ran", outcome.blocks_run == len(found) > 0,
               f"{outcome.blocks_run} of {len(found)} blocks ({outcome.commands} commands)",
               "all of them, at least one")


def as_the_page_shows(check, name: str, outcome: examples.Outcome) -> None:
    check.equal(f"{name}: every command's status and output as the page shows", [], outcome.failures)


# ---------------------------------------------------------------- the pages

@pytest.mark.checks(3)
def test_quick_start_from_a_bare_machine(check, world):
    """README.md's quick start on a machine without linkcond: `make`, `sudo make install`,
    enabling the socket, then trying it; linkcond is installed and its socket enabled after.
    Its `make` finds what the host built (building in the VM would take many minutes)."""
    build_is_current()
    bare_machine()
    found = examples.runnable(REPO / "README.md", QUICK_START)
    outcome = examples.run_blocks(found, COMMAND_LIMIT, environment())
    ran_every_block(check, "the quick start", outcome, found)
    as_the_page_shows(check, "the quick start", outcome)
    check.true("after the quick start: linkcond installed, its socket enabled", installed(),
               f"{PREFIX}/bin/linkcond {'present' if Path(PREFIX, 'bin', 'linkcond').exists() else 'absent'}, "
               f"socket {systemctl('is-enabled', SOCKET).out.strip() or 'unknown'}", "present, enabled")


@pytest.mark.checks(2)
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=page_id)
def test_page_examples(check, quick_started, page):
    """Each runnable block of the page, in order, as written: each command's status and output as
    the page shows them."""
    found = examples.runnable(page)
    outcome = examples.run_blocks(found, COMMAND_LIMIT, environment())
    ran_every_block(check, page_id(page), outcome, found)
    as_the_page_shows(check, page_id(page), outcome)


@pytest.mark.checks(1)
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_shell_block_left_unrun(check, page):
    """Every shell-like block of the page is run, or says why not: a ```bash block, say, or a
    console transcript without a language, would otherwise stop being run without anyone
    noticing."""
    unrun = [f"{b.where} ```{b.info or '(no language)'}" for b in examples.blocks(page) if b.kind == "unrun"]
    check.equal(f"{page_id(page)}: shell-like blocks neither run nor marked <!-- example: skip (REASON) -->", [], unrun)


# ---------------------------------------------------------------- Examples/swift-testing

def conditions() -> list[dict]:
    """Every condition, as what the Swift tests must leave as they found it."""
    api = ControlAPI(CONTROL_SOCKET, timeout=120)
    return [{"id": c.get("id"), "active": c.get("active"), "profile": (c.get("profile") or {}).get("name"),
             "lease": c.get("lease")} for c in api.get_json("/v1/conditions")["conditions"]]


@pytest.fixture
def swift_bundle() -> Path:
    """Examples/swift-testing's test bundle, built on the host (BUILD_SWIFT_EXAMPLE): building in
    the VM would take many minutes."""
    if not SWIFT_EXAMPLE.exists():
        raise HarnessError(f"{SWIFT_EXAMPLE.relative_to(REPO)} is missing: build it on the host with `{BUILD_SWIFT_EXAMPLE}`")
    return SWIFT_EXAMPLE


def swift_example(bundle: Path, *args: str):
    """The bundle's tests, as `swift test` runs them, against the installed daemon with
    example.com across eth0."""
    done = run([bundle, *args], timeout=600, cwd=REPO)
    print(done.output)
    return done


@pytest.mark.checks(2)
def test_swift_example_xctest(check, swift_bundle, quick_started):
    """Its XCTest test runs (a bundle that finds no test exits 0 too) and passes, and leaves the
    conditions as it found them."""
    before = conditions()
    done = swift_example(swift_bundle)
    check.contains("Examples/swift-testing, XCTest: its one test ran and passed",
                   done.output if done.rc == 0 else f"exit {done.rc}", "Executed 1 test, with 0 failures")
    check.equal("after the XCTest run: the conditions as before", json.dumps(before), json.dumps(conditions()))


@pytest.mark.checks(2)
def test_swift_example_swift_testing(check, swift_bundle, quick_started):
    """Its two Swift Testing tests run and pass, and leave the conditions as they found them."""
    before = conditions()
    done = swift_example(swift_bundle, "--testing-library", "swift-testing")
    check.contains("Examples/swift-testing, Swift Testing: its two tests ran and passed",
                   done.output if done.rc == 0 else f"exit {done.rc}", "Test run with 2 tests in 1 suite passed")
    check.equal("after the Swift Testing run: the conditions as before", json.dumps(before), json.dumps(conditions()))
