"""linkcondd as the tests run it: started in a namespace, its state, history and log in a work
directory, read through its API, stopped or killed, and the `linkcond` client pointed at it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from .api import ControlAPI, NoAnswer
from .system import BIN, HarnessError, Result, as_member, as_stranger, fd_count, rss_kib, run, thread_names
from .topology import Namespace

#: How long a start may take before the daemon counts as failed: a liveness limit, not a
#: timed check.
START_LIMIT = 60


class Daemon:
    """One linkcondd. `start` waits until it answers on its socket; every later read goes through
    `api`. Its log stays in WORK/linkcondd.log across restarts, each start marked."""

    def __init__(self, namespace: Namespace, interface: str, work: Path, profiles: Path, *,
                 args: Sequence[str] = (), hosts_file: Path | None = None, socket: Path | None = None,
                 resolv_conf: Path | None = None):
        self.namespace = namespace
        self.interface = interface
        self.work = Path(work)
        self.profiles = Path(profiles)
        self.args = list(args)
        self.hosts_file = hosts_file
        self.resolv_conf = resolv_conf
        self.socket = Path(socket or self.work / "linkcond.sock")
        self.state_dir = self.work / "state"
        self.history_file = self.work / "history.jsonl"
        self.log_path = self.work / "linkcondd.log"
        self.api = ControlAPI(self.socket)
        self.process: subprocess.Popen | None = None
        self.last_exit: int | None = None
        self.work.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- life

    def argv(self, *extra: str) -> list[str]:
        command = [str(BIN / "linkcondd"), "--interface", self.interface, "--socket", str(self.socket),
                   "--profiles", str(self.profiles), "--state-dir", str(self.state_dir),
                   "--history-file", str(self.history_file), "--log-level", "debug", *self.args, *extra]
        binds = [(path, target) for path, target in ((self.hosts_file, "/etc/hosts"),
                                                     (self.resolv_conf, "/etc/resolv.conf")) if path is not None]
        if binds:
            # The daemon reads HOSTS as /etc/hosts (and RESOLV_CONF as /etc/resolv.conf), bound
            # over it in a mount namespace of its own that still sees new mounts (`ip netns add`);
            # the same process, so signals reach it.
            mounts = " && ".join(f'mount --bind "${n}" {target}' for n, (_, target) in enumerate(binds, 1))
            command = ["unshare", "--mount", "--propagation", "slave", "sh", "-c",
                       f'{mounts} && shift {len(binds)} && exec "$@"', "sh", *(str(path) for path, _ in binds), *command]
        return self.namespace.argv(*command)

    def start(self, *extra: str) -> "Daemon":
        """Starts the daemon (with EXTRA arguments this once) and waits until it answers."""
        if self.running:
            raise HarnessError("the daemon is already running")
        self.socket.unlink(missing_ok=True)
        with self.log_path.open("a") as log:
            log.write(f"--- linkcondd start {time.strftime('%H:%M:%S')} {' '.join(extra)}\n")
            log.flush()
            # The caller's environment whole, and a fault shim (scripts/kernel-fault-test) preloaded.
            env = dict(os.environ)
            if env.get("LC_DAEMON_PRELOAD"):
                env["LD_PRELOAD"] = " ".join(filter(None, [env.get("LD_PRELOAD"), env["LC_DAEMON_PRELOAD"]]))
            self.process = subprocess.Popen(self.argv(*extra), stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_LIMIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.last_exit = self.process.returncode
                self.process = None
                raise HarnessError(f"linkcondd exited {self.last_exit} at start:\n{self.log_tail()}")
            if self.socket.exists():
                try:
                    if self.api.get("/v1/status", timeout=5).status == 200:
                        return self
                except NoAnswer:
                    pass
            time.sleep(0.05)
        state = self.process_state()
        self.kill()
        raise HarnessError(f"linkcondd did not answer within {START_LIMIT} s ({state}):\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise HarnessError("no daemon is running")
        return self.process.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        """Sends SIG and waits for the exit: its status, 124 when it had to be killed after
        TIMEOUT, None when none ran."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self.last_exit = 124
                return 124
        self.last_exit = process.returncode if process.returncode >= 0 else 128 - process.returncode
        return self.last_exit

    def kill(self) -> None:
        """SIGKILL, as a crash would end it."""
        self.stop(signal.SIGKILL)

    def restart(self, *extra: str) -> "Daemon":
        self.stop()
        return self.start(*extra)

    def wait_exit(self, timeout: float) -> int | None:
        """The daemon's exit status when it ends by itself within TIMEOUT (a fault that kills it),
        else None (it still runs)."""
        if self.process is None:
            return self.last_exit
        try:
            rc = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.process = None
        self.last_exit = rc if rc >= 0 else 128 - rc
        return self.last_exit

    # ---------------------------------------------------------------- what it is like

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def process_state(self) -> str:
        if not self.running:
            return "not running"
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{self.pid}/wchan").read_text()
        except OSError:
            return "unreadable"
        return f"state {state}, waiting in {wchan}, socket {'there' if self.socket.exists() else 'absent'}"

    def rss_kib(self) -> int | None:
        return rss_kib(self.pid) if self.running else None

    def fd_count(self) -> int | None:
        return fd_count(self.pid) if self.running else None

    def foreign_threads(self) -> list[str] | None:
        """The daemon's threads that are not its main thread, its event loop or NIO's blocking
        pool (a libdispatch worker, say); None when no thread could be read."""
        names = thread_names(self.pid) if self.running else None
        if names is None:
            return None
        return [n for n in names if n != "linkcondd" and not n.startswith(("NIO-SGLTN-", "SGLTN-TP-"))]

    # ---------------------------------------------------------------- the client

    def client_argv(self, *args: str) -> list[str]:
        return [str(BIN / "linkcond"), "--socket", str(self.socket), *map(str, args)]

    def cli(self, *args: str, timeout: float = 30, user: str = "root", input: str | None = None,
            env: dict[str, str] | None = None) -> Result:
        """`linkcond ARGS` against this daemon, as root, a `member` of its group or a `stranger`."""
        argv = self.client_argv(*args)
        if user == "member":
            argv = as_member(argv)
        elif user == "stranger":
            argv = as_stranger(argv)
        elif user != "root":
            raise ValueError(f"unknown user {user!r}")
        return run(argv, timeout=timeout, input=input, env=env)

    def client_process(self, *args: str, **popen) -> subprocess.Popen:
        """`linkcond ARGS` started in the background (a `run` whose command the test controls)."""
        popen.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(self.client_argv(*args), **popen)


def environment(**extra: str) -> dict[str, str]:
    """The harness's environment with EXTRA set."""
    env = dict(os.environ)
    env.update(extra)
    return env
