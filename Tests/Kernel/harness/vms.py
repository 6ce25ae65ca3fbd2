"""pytest plugin: the kernel suite runs in VMs, and pytest on the host reports it.

On the host (`make kernel-test`), pytest collects the suite, then hands it to VMs instead of
running it: each module's tests go to a VM of their own, started by scripts/vm-run, where pytest
runs them (worker mode) and streams each test's reports back through a file. The host logs them
as they come, as if it had run them, so that its terminal output, its closing line and its JUnit
report are the whole suite's. A VM that dies or runs out of time fails the tests it had not
reported, with the checks it had passed so far. A guest that stops (no word from its pytest,
heartbeat included, for --vm-silence seconds) is killed and booted once more for the tests it had
not ended; the summary names each such VM.

Two phases, in order:
  functional  every module's untimed tests, as many VMs at once as `--vm-jobs` (the host's CPUs),
              each User-mode Linux VM pinned to a CPU of its own;
  timed       the tests marked `timed` (round trips, rates, jitter, step and window times), with
              nothing but timed VMs running, one per host CPU, each pinned to it (a qemu VM with
              one emulated CPU).

A module names its VM with `VM = "uml"` (the default: User-mode Linux), `"qemu"` (Debian's own
kernel under emulation) or `"systemd"` (User-mode Linux with systemd as init in a container, for
the units, the package and the examples); a test marked `debian_kernel` runs on qemu whatever its
module says (under systemd still, in a systemd module). Under emulation a qemu boot takes 45 s
(100 s with systemd) before the first test: the functional phase boots one qemu VM for every
module's functional tests on it (`shared.functional.qemu`), and a systemd module's functional
tests on qemu run in its timed qemu VM, before its timed tests, one at a time as ever.

Inside a VM without a host controller (`scripts/vm-run --uml -- .build/venv/bin/python -m pytest
Tests/Kernel/...`), pytest runs the tests itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _pytest.reports import TestReport

from .system import BIN, KERNEL_TESTS, REPO, in_vm

WORKER_ENV = "LC_VM_WORKER"
DURATIONS = KERNEL_TESTS / "durations.json"
VM_KINDS = ("uml", "qemu", "systemd")


def mode(config) -> str:
    """`worker` (in a VM, for a host), `local` (run the tests here) or `controller` (hand them to VMs)."""
    if os.environ.get(WORKER_ENV):
        return "worker"
    if in_vm() or config.getoption("--here") or config.option.collectonly:
        return "local"
    return "controller"


def pytest_addoption(parser):
    group = parser.getgroup("linkcond", "the kernel suite's VMs")
    group.addoption("--vm-jobs", type=int, default=os.cpu_count() or 1,
                    help="VMs at once in the functional phase (default: the host's CPUs)")
    group.addoption("--vm-timeout", type=float, default=1500,
                    help="seconds one VM may take before it is killed and its unreported tests fail")
    group.addoption("--vm-silence", type=float, default=120,
                    help="seconds without a word from a VM's pytest, its heartbeat included, after which the "
                         "guest is taken for stopped: killed, and booted once more for the tests it had not ended")
    group.addoption("--vm-logs", default=str(REPO / ".build" / "test-logs" / "kernel"),
                    help="where each VM's output, reports and checks go")
    group.addoption("--phase", choices=("all", "functional", "timed"), default="all",
                    help="run only one phase")
    group.addoption("--vm", choices=("uml", "qemu"), default=None,
                    help="run every module on this kernel (default: each module's own; tests marked "
                         "debian_kernel run on qemu whatever this says)")
    group.addoption("--timed-lock", metavar="FILE", default=None,
                    help="before the timed phase, take FILE's lock (flock) exclusively: other work on the "
                         "machine (make test's builds beside the functional phase) holds it shared until it ends")
    group.addoption("--host-builds", metavar="DIR", default=None,
                    help="a module that names host builds (`HOST_BUILDS`) waits, its VM unstarted, until a file of "
                         "each one's name is in DIR: make test builds them beside the functional phase and writes "
                         "the file when each build ends (default: no wait; they are already built)")
    group.addoption("--store-durations", action="store_true",
                    help=f"write each VM's time to {DURATIONS.name}, which orders the next runs")
    group.addoption("--here", action="store_true",
                    help="run the tests in this machine, not in VMs (only inside a VM: needs root and netem)")


def pytest_configure(config):
    how = mode(config)
    config.stash[_MODE] = how
    if how == "worker":
        config.pluginmanager.register(ReportStream(config, Path(os.environ[WORKER_ENV])), "linkcond-report-stream")
    elif how == "controller":
        config.pluginmanager.register(Controller(config), "linkcond-vm-controller")


_MODE = pytest.StashKey[str]()


# ---------------------------------------------------------------- in the VM

class ReportStream:
    """Writes every report, as pytest serializes them for its own distributed runs, one JSON
    line each, flushed at once: the host reads them while the VM runs. A heartbeat line every
    HEARTBEAT seconds, from a thread of its own, tells the host that the guest still runs while
    a test is silent: a guest that stops (a qemu guest once spun its CPUs without a word) is
    told from a test that hangs (which its own time limits end)."""

    HEARTBEAT = 5

    def __init__(self, config, path: Path):
        self.config = config
        self.file = path.open("a", buffering=1)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.quiet = threading.Event()
        threading.Thread(target=self._beat, name="linkcond-heartbeat", daemon=True).start()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # A timed test runs without heartbeats: each is an fsync through User-mode Linux's
        # hostfs, which holds the whole guest while the host writes. The host then waits for
        # the test's end by the VM's time limit alone.
        timed = item.get_closest_marker("timed") is not None
        if timed:
            self.quiet.set()
            self._line({"quiet": item.nodeid})
        yield
        if timed:
            self.quiet.clear()
            self._line({"alive": round(time.monotonic(), 1)})

    def _line(self, message: dict) -> None:
        with self.lock:
            if self.file.closed:
                return
            self.file.write(json.dumps(message) + "\n")
            # Through to the host now: User-mode Linux's hostfs would otherwise hold it back.
            os.fsync(self.file.fileno())

    def _beat(self) -> None:
        while not self.stopped.wait(self.HEARTBEAT):
            if not self.quiet.is_set():
                self._line({"alive": round(time.monotonic(), 1)})

    def _write(self, kind: str, report) -> None:
        self._line({kind: self.config.hook.pytest_report_to_serializable(config=self.config, report=report)})

    def pytest_runtest_logreport(self, report):
        self._write("test", report)

    def pytest_collectreport(self, report):
        if report.failed:
            self._write("collect", report)

    def pytest_collection_finish(self, session):
        self._line({"collected": len(session.items)})

    def pytest_sessionfinish(self, session, exitstatus):
        self.stopped.set()
        self._line({"finished": int(exitstatus)})
        with self.lock:
            self.file.close()


# ---------------------------------------------------------------- on the host

@dataclass
class Group:
    """The tests one VM runs: one module's (or, for `shared`, several modules'), in one phase,
    on one kernel (`uml` or `qemu`), with or without systemd as init."""

    module: str
    phase: str
    kernel: str
    systemd: bool
    items: list = field(default_factory=list)
    #: What the module's tests need built on the host first (its `HOST_BUILDS`: "bench", "deb", "swift-example").
    host_builds: tuple = ()

    @property
    def name(self) -> str:
        return f"{Path(self.module).stem}.{self.phase}" + ("" if self.kernel == "uml" else f".{self.kernel}")


def _vm_of(item, forced: str | None) -> tuple[str, bool]:
    """The kernel ITEM runs on and whether under systemd: its module's `VM`, unless `--vm` forces
    a kernel or the test is marked `debian_kernel`."""
    kind = getattr(item.module, "VM", "uml")
    if kind not in VM_KINDS:
        raise pytest.UsageError(f"{item.module.__name__}: VM = {kind!r}, not one of {VM_KINDS}")
    kernel = "qemu" if kind == "qemu" else "uml"
    if forced:
        kernel = forced
    if item.get_closest_marker("debian_kernel"):
        kernel = "qemu"
    return kernel, kind == "systemd"


#: The module name of the one qemu VM that runs every module's functional tests on Debian's kernel.
SHARED_QEMU_MODULE = "shared"


def _module_of(item) -> str:
    return item.nodeid.split("::")[0]


def balanced_order(groups: list[Group], expected, lanes: int) -> list[Group]:
    """GROUPS in the order that, each started on whichever of two CPUs frees first, splits them
    into two queues whose EXPECTED times are as even as can be (every split tried, up to 16
    groups). Longest first alone can leave one CPU idle for most of a VM's time at the end."""
    if lanes != 2 or not 2 < len(groups) <= 16:
        return groups
    times = [expected(group) for group in groups]
    total = sum(times)
    best_first, best_longest = None, None
    # Group 0 is in the first queue: the other half of each split is the same split.
    for mask in range(1 << (len(groups) - 1)):
        first = [0] + [i for i in range(1, len(groups)) if not mask >> (i - 1) & 1]
        first_total = sum(times[i] for i in first)
        longest = max(first_total, total - first_total)
        if best_longest is None or longest < best_longest:
            best_first, best_longest = set(first), longest
    queues = [sorted((i for i in range(len(groups)) if (i in best_first) == (lane == 0)), key=lambda i: -times[i])
              for lane in (0, 1)]
    clocks, order = [0.0, 0.0], []
    while queues[0] or queues[1]:
        lane = min((lane for lane in (0, 1) if queues[lane]), key=lambda lane: clocks[lane])
        index = queues[lane].pop(0)
        order.append(groups[index])
        clocks[lane] += times[index]
    return order


def kill_tree(root: int) -> None:
    """Kills ROOT (a VM's scripts/vm-run, started in a session of its own) and everything it
    started: the processes of its session and their descendants, frozen first so that none
    forks or leaves meanwhile. Its process group is not enough: `timeout` in vm-run puts itself
    and the VM in a group of their own, User-mode Linux a session of its own, and either would
    outlive vm-run, spinning, to the VM's time limit."""
    def processes() -> dict[int, tuple[int, int]]:
        found = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
                fields = stat[stat.rindex(")") + 2:].split()
                found[int(entry.name)] = (int(fields[1]), int(fields[3]))
        return found

    for _ in range(3):
        table = processes()
        tree = {pid for pid, (_, session) in table.items() if session == root}
        if root in table:
            tree.add(root)
        grew = True
        while grew:
            more = {pid for pid, (parent, _) in table.items() if parent in tree} - tree
            tree |= more
            grew = bool(more)
        if not tree:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in tree:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.1)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


class Controller:
    def __init__(self, config):
        self.config = config
        self.logs = Path(config.getoption("--vm-logs"))
        self.jobs = max(1, config.getoption("--vm-jobs"))
        self.limit = config.getoption("--vm-timeout")
        self.silence_limit = config.getoption("--vm-silence")
        self.began = time.monotonic()
        self.announced_waits: set[str] = set()
        self.events: queue.Queue = queue.Queue()
        self.durations: dict[str, float] = {}
        #: Each VM's time in an earlier run (`durations.json`), read when first needed.
        self.known_durations: dict[str, float] | None = None
        self.processes: dict[str, subprocess.Popen] = {}
        self.stopped_guests: list[str] = []
        #: Held (exclusively) from the timed phase's start to the run's end: see --timed-lock.
        self.lock_file = None
        # A time limit that ends the run (make test's) ends it as Ctrl-C would: pytest still
        # reports what ran, the checks so far and its closing line.
        signal.signal(signal.SIGTERM, _interrupt)

    def pytest_sessionfinish(self, session):
        for process in list(self.processes.values()):
            kill_tree(process.pid)

    def pytest_collection_modifyitems(self, config, items):
        """`--phase` deselects the other phase's tests, as `-k` would: they are not run, so they
        state no checks."""
        phase = config.getoption("--phase")
        if phase == "all":
            return
        keep = [item for item in items if (item.get_closest_marker("timed") is not None) == (phase == "timed")]
        if len(keep) < len(items):
            kept = set(keep)
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = keep

    # The host never runs a test's fixtures: its root, namespaces and kernel are not the suite's.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(f"{session.testsfailed} error(s) during collection")
        if session.config.option.collectonly:
            return True
        groups = self.plan(session.items)
        self.logs.mkdir(parents=True, exist_ok=True)
        phase = self.config.getoption("--phase")
        functional = [g for g in groups if g.phase == "functional" and phase in ("all", "functional")]
        timed = [g for g in groups if g.phase == "timed" and phase in ("all", "timed")]
        self.run_phase(session, functional, self.jobs)
        if timed:
            self.wait_for_the_machine(self.config.getoption("--timed-lock"))
        # A CPU of its own for each timed VM, one per host CPU, each pinned to it: User-mode
        # Linux's and qemu's (one emulated CPU) alike.
        jobs = min(self.jobs, os.cpu_count() or 1)
        self.run_phase(session, balanced_order(timed, self.expected_seconds, jobs), jobs)
        if self.config.getoption("--store-durations"):
            known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
            known.update({k: round(v) for k, v in self.durations.items()})
            DURATIONS.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
        return True

    def wait_for_the_machine(self, lock: str | None) -> None:
        """Blocks until no other work holds LOCK: the timed phase shares the CPUs with nothing."""
        if lock is None:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        began = time.monotonic()
        self.lock_file = open(lock, "a")
        try:
            fcntl.flock(self.lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            reporter.write_line(f"vms: the timed phase waits for the work beside the suite to end ({lock})")
            fcntl.flock(self.lock_file, fcntl.LOCK_EX)
        reporter.write_line(f"vms: the timed phase starts, the machine to itself (waited {time.monotonic() - began:.0f} s)")

    def plan(self, items) -> list[Group]:
        """The VMs to boot. A qemu boot under emulation costs 45 s (with systemd 100 s) before
        the first test, so qemu VMs are shared: every module's functional tests on Debian's
        kernel go to one VM (`shared.functional.qemu`), and a systemd module's go to its timed
        qemu VM when it has one, run there before the timed tests, one after the other."""
        forced = self.config.getoption("--vm")
        placed = [(item, "timed" if item.get_closest_marker("timed") else "functional", *_vm_of(item, forced)) for item in items]
        # Only when the timed phase runs too: with --phase functional they would never run.
        both_phases = self.config.getoption("--phase") == "all"
        timed_qemu_modules = {_module_of(item) for item, phase, kernel, systemd in placed
                              if both_phases and phase == "timed" and kernel == "qemu" and systemd}
        groups: dict[tuple, Group] = {}
        for item, phase, kernel, systemd in placed:
            module = _module_of(item)
            if phase == "functional" and kernel == "qemu":
                if not systemd:
                    module = SHARED_QEMU_MODULE
                elif module in timed_qemu_modules:
                    phase = "timed"
            key = (module, phase, kernel, systemd)
            group = groups.setdefault(key, Group(*key))
            group.host_builds = tuple(sorted(set(group.host_builds) | set(getattr(item.module, "HOST_BUILDS", ()))))
            group.items.append(item)
        # Longest first, so that the last VMs to end are short ones.
        return sorted(groups.values(), key=lambda g: -self.expected_seconds(g))

    def expected_seconds(self, group: Group) -> float:
        """How long GROUP's VM took last time (`durations.json`), or a minute."""
        if self.known_durations is None:
            self.known_durations = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        return self.known_durations.get(group.name, 60)

    def run_phase(self, session, groups: list[Group], jobs: int) -> None:
        if not groups:
            return
        pending = list(groups)
        free_cpus = list(range(jobs))
        running: dict[str, threading.Thread] = {}
        cpu_of: dict[str, int] = {}
        while pending or running:
            while free_cpus and (group := self.next_startable(pending)):
                pending.remove(group)
                cpu = free_cpus.pop(0)
                cpu_of[group.name] = cpu
                thread = threading.Thread(target=self.run_vm, args=(group, cpu, jobs > 1), daemon=True)
                running[group.name] = thread
                thread.start()
            try:
                kind, payload = self.events.get(timeout=1)
            except queue.Empty:
                continue
            if kind == "report":
                self.log_report(session, *payload)
            elif kind == "done":
                group = payload
                running.pop(group.name).join()
                free_cpus.append(cpu_of.pop(group.name))
                free_cpus.sort()
                if session.shouldstop or session.shouldfail:
                    pending.clear()

    #: Seconds a group waits for its host builds before it starts without them (and its tests
    #: say what is missing): a build that never ends must not hold the suite to its time limit.
    HOST_BUILD_WAIT = 1200

    def next_startable(self, pending: list[Group]) -> Group | None:
        """The first of PENDING whose host builds have ended; once they have had HOST_BUILD_WAIT s,
        the first of them all."""
        directory = self.config.getoption("--host-builds")
        if directory is None:
            return pending[0] if pending else None
        for group in pending:
            missing = [name for name in group.host_builds if not (Path(directory) / name).exists()]
            if not missing:
                return group
            if group.name not in self.announced_waits:
                self.announced_waits.add(group.name)
                reporter = self.config.pluginmanager.get_plugin("terminalreporter")
                reporter.write_line(f"vms: {group.name} waits for the host's build of {', '.join(missing)}")
        if pending and time.monotonic() - self.began > self.HOST_BUILD_WAIT:
            return pending[0]
        return None

    # ---------------------------------------------------------------- one VM

    def vm_argv(self, group: Group, items: list, cpu: int, pin: bool) -> list[str]:
        vm = [str(REPO / "scripts" / "vm-run"), "--timeout", str(int(self.limit)), "--rwdir", str(self.logs)]
        vm += ["--systemd", "--memory", "3G"] if group.systemd else ["--memory", "2G"]
        if group.kernel == "uml":
            vm += ["--uml"]
            if pin:
                vm += ["--pin", str(cpu % (os.cpu_count() or 1))]
        else:
            if pin:
                # Beside another VM, one emulated CPU: two, on a host CPU and a half, wait for
                # each other (two systemd VMs side by side booted in 89 s, not 32, and ran 2.9
                # times slower each). A timed one has its host CPU to itself, as a User-mode
                # Linux VM has: its timers then fire on time whatever the VM beside it does.
                vm += ["--cpus", "1"]
                if group.phase == "timed":
                    vm += ["--pin", str(cpu % (os.cpu_count() or 1))]
        python = REPO / ".build" / "venv" / "bin" / "python"
        tests = [str(KERNEL_TESTS / item.nodeid) for item in items]
        if group.kernel == "qemu":
            # virtme-ng hands the command to the guest on the kernel's command line, which holds
            # 2048 bytes (base64-encoded: about 1500 of command); longer, the guest never runs it.
            # The tests go in a file pytest reads (an argument file, `@PATH`), one a line.
            listing = self.logs / f"{group.name}.tests"
            listing.write_text("".join(f"{test}\n" for test in tests))
            tests = [f"@{listing}"]
        pytest_args = [str(python), "-m", "pytest", "-c", str(KERNEL_TESTS / "pytest.ini"),
                       "--rootdir", str(KERNEL_TESTS), "-p", "no:cacheprovider", "-q", "-rfE", "--tb=short", *tests]
        environment = {
            WORKER_ENV: str(self.logs / f"{group.name}.reports"),
            "LC_CHECKS_LOG": str(self.logs / f"{group.name}.checks"),
            "LINKCOND_BIN": str(BIN),
            # The suite's own plugins only: others installed beside pytest cost seconds to import.
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        }
        return [*vm, "--", "env", *[f"{k}={v}" for k, v in environment.items()], *pytest_args]

    # Seconds from a VM's start to pytest's first word in it (boot, import, collection: each
    # VM's log says how long it took), beyond which the guest is taken for stopped, as it is when
    # its pytest then says nothing for --vm-silence seconds (its heartbeat comes every
    # ReportStream.HEARTBEAT s, whatever a test does): the VM is killed and booted once more for
    # the tests it had not ended, the one it was in from its start. A qemu guest under emulation
    # once spun its CPUs without a word until the VM's time limit.
    BOOT_LIMIT = {("uml", False): 90, ("uml", True): 150, ("qemu", False): 240, ("qemu", True): 300}

    def run_vm(self, group: Group, cpu: int, pin: bool) -> None:
        reports = self.logs / f"{group.name}.reports"
        checks = self.logs / f"{group.name}.checks"
        log = self.logs / f"{group.name}.log"
        began = time.monotonic()
        # A test's reports are held until its teardown's: a test the guest stopped in is run
        # again whole, and pytest on the host hears of it once.
        ended: set[str] = set()
        for attempt in (1, 2):
            left = [item for item in group.items if item.nodeid not in ended]
            for path in (reports, checks):
                path.unlink(missing_ok=True)
            reports.touch()
            held: dict[str, list] = {}
            argv = self.vm_argv(group, left, cpu, pin)
            process, stopped = self.run_vm_once(group, argv, log, reports, held, ended, attempt)
            if stopped is None or attempt == 2:
                break
            during = ", ".join(held) or "no test"
            self.stopped_guests.append(f"{group.name}: {stopped}, during {during}; booted once more for "
                                       f"{len(group.items) - len(ended)} test(s)")
        self.processes.pop(group.name, None)
        self.durations[group.name] = time.monotonic() - began
        if stopped is not None:
            why = f"the VM was killed: {stopped} (twice)"
        elif process.returncode == 124:
            why = "the VM ran out of time (--vm-timeout)"
        else:
            why = f"the VM ended (exit {process.returncode})"
        self.finish_unreported(group, held, ended, why, log, checks)
        self.events.put(("done", group))

    def run_vm_once(self, group: Group, argv: list[str], log: Path, reports: Path, held: dict, ended: set,
                    attempt: int) -> tuple[subprocess.Popen, str | None]:
        """One boot of GROUP's VM, each test's reports passed on as it ends: the process, and
        why it was killed for its silence (None when it was not)."""
        with log.open("w" if attempt == 1 else "a") as out:
            out.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
            out.flush()
            started = last_word = time.monotonic()
            # A session of its own: an interrupted run kills each VM with everything it started.
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       cwd=REPO, start_new_session=True)
            self.processes[group.name] = process
            heard = finished = quiet = False
            with reports.open() as stream:
                buffer = ""
                while True:
                    exited = process.poll() is not None
                    chunk = stream.read()
                    now = time.monotonic()
                    if chunk:
                        if not heard:
                            out.write(f"vms: pytest's first word {now - started:.1f} s after the VM's start\n")
                            out.flush()
                        heard, last_word = True, now
                    buffer += chunk
                    *lines, buffer = buffer.split("\n")
                    for line in lines:
                        kind = self.take(group, line, held, ended)
                        finished |= kind == "finished"
                        quiet = kind == "quiet" or (quiet and kind != "alive")
                    if exited and not chunk:
                        break
                    boot_limit = self.BOOT_LIMIT[group.kernel, group.systemd]
                    if not heard and now - started > boot_limit:
                        stopped = f"no word from pytest in the VM {boot_limit} s after its start"
                    elif heard and not finished and not quiet and now - last_word > self.silence_limit:
                        stopped = f"no word from the VM for {self.silence_limit} s, not even its heartbeat"
                    else:
                        if not chunk:
                            time.sleep(0.2)
                        continue
                    kill_tree(process.pid)
                    process.wait()
                    out.write(f"\nvms: {stopped}: killed"
                              + (", booting it once more for the tests it had not ended\n" if attempt == 1 else "\n"))
                    return process, stopped
        return process, None

    def take(self, group: Group, line: str, held: dict, ended: set) -> str | None:
        """Takes one line of a VM's reports; returns what it was (`test`, `alive`, ...)."""
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if "test" in message:
            report = self.config.hook.pytest_report_from_serializable(config=self.config, data=message["test"])
            held.setdefault(report.nodeid, []).append(report)
            if report.when == "teardown":
                for each in held.pop(report.nodeid):
                    self.events.put(("report", (group, each)))
                ended.add(report.nodeid)
        elif "collect" in message:
            report = self.config.hook.pytest_report_from_serializable(config=self.config, data=message["collect"])
            for item in group.items:
                if item.nodeid not in ended:
                    self.fail(group, item, f"collection failed in the VM:\n{report.longrepr}", "setup")
                    ended.add(item.nodeid)
        return next(iter(message), None) if isinstance(message, dict) else None

    def finish_unreported(self, group: Group, held: dict, ended: set, why: str, log: Path, checks: Path) -> None:
        """Fails every test of GROUP the VM did not end, saying why and what it had checked."""
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:]) if log.exists() else ""
        passed = checks.read_text().splitlines() if checks.exists() else []
        for item in group.items:
            if item.nodeid in ended:
                continue
            partial = held.pop(item.nodeid, [])
            for each in partial:
                self.events.put(("report", (group, each)))
            own = [line.split("\t", 1)[1] for line in passed if line.startswith(item.nodeid + "\t")]
            text = (f"{why} before this test reported its end.\n"
                    f"Its checks so far ({len(own)}):\n  " + "\n  ".join(own or ["none"]) +
                    f"\nThe VM's last lines ({log}):\n{tail}")
            when = next(phase for phase in ("setup", "call", "teardown") if phase not in {r.when for r in partial})
            self.fail(group, item, text, when)

    def fail(self, group: Group, item, text: str, when: str) -> None:
        """Reports ITEM failed in phase WHEN, saying TEXT, and ended."""
        self.events.put(("report", (group, TestReport(item.nodeid, item.location, {}, "failed", text, when))))
        if when != "teardown":
            self.events.put(("report", (group, TestReport(item.nodeid, item.location, {}, "passed", None, "teardown"))))

    def pytest_terminal_summary(self, terminalreporter):
        if self.stopped_guests:
            terminalreporter.section("VMs whose guest stopped, booted once more")
            for line in self.stopped_guests:
                terminalreporter.line(line)

    def log_report(self, session, group: Group, report) -> None:
        item = next((i for i in group.items if i.nodeid == report.nodeid), None)
        ihook = item.ihook if item is not None else session.ihook
        if report.when == "setup":
            ihook.pytest_runtest_logstart(nodeid=report.nodeid, location=report.location)
        ihook.pytest_runtest_logreport(report=report)
        if report.when == "teardown":
            ihook.pytest_runtest_logfinish(nodeid=report.nodeid, location=report.location)
