"""linkcond under a real systemd (the VM of `VM = "systemd"`: a container whose PID 1 is systemd,
scripts/in-systemd-container): systemctl and the journal read as data, the units installed for a
test, and the machine read as a tree of files, for the package and `make install` tests.

Run as `python3 -m harness.systemd observe-stop INTERFACE DIR` (from Tests/Kernel), it is the
observer a test's units run after `linkcondd --cleanup` (ExecStopPost=): why the service stopped,
and the interface as `harness.tc.snapshot` reads it, written to DIR.
"""

from __future__ import annotations

import json
import os
import grp
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .api import ControlAPI, NoAnswer
from .system import BIN, KERNEL_TESTS, REPO, HarnessError, Result, run, wait_until
from .tc import Device, snapshot

SERVICE = "linkcondd.service"
SOCKET = "linkcondd.socket"
UNITS = (SERVICE, SOCKET)
CONTROL_SOCKET = Path("/run/linkcond/control.sock")
RUNTIME_UNITS = Path("/run/systemd/system")
#: Where PrivateTmp= and ProtectHome= hide files from the service: neither the binaries nor
#: anything it reads may be there.
HIDDEN_FROM_SERVICE = ("/tmp/", "/var/tmp/", "/home/", "/root/", "/run/user/")


def under_systemd() -> bool:
    try:
        return Path("/proc/1/comm").read_text().strip() == "systemd"
    except OSError:
        return False


def require_systemd() -> None:
    if not under_systemd():
        raise HarnessError("PID 1 is not systemd: this module runs in the systemd VM (VM = \"systemd\")")


def systemctl(*args: str, timeout: float = 120) -> Result:
    return run(["systemctl", *args], timeout=timeout)


def prop(name: str, unit: str = SERVICE) -> str:
    """One property of UNIT, as `systemctl show` says it; HarnessError when it cannot say."""
    return systemctl("show", "-p", name, "--value", unit, timeout=60).ok().out.strip()


def state(unit: str = SERVICE) -> str:
    """ActiveState/SubState of UNIT."""
    return f"{prop('ActiveState', unit)}/{prop('SubState', unit)}"


def wait_state(active: str, unit: str = SERVICE, timeout: float = 120) -> bool:
    return wait_until(lambda: prop("ActiveState", unit) == active, timeout, 0.2) is not None


def control_api(timeout: float = 120) -> ControlAPI:
    """The API on systemd's control socket (a connection starts the service when it is not
    running: in the VM that takes a while)."""
    return ControlAPI(CONTROL_SOCKET, timeout=timeout)


def answers(timeout: float = 120) -> dict | None:
    """GET /v1/status on the control socket, or None when nothing answers."""
    try:
        reply = control_api(timeout).get("/v1/status")
    except NoAnswer:
        return None
    return reply.json if reply.status == 200 else None


def linkcond(*args: str, timeout: float = 120, argv_prefix: Iterable[str] = ()) -> Result:
    """The client under test on the default socket (systemd's)."""
    return run([*argv_prefix, str(BIN / "linkcond"), *args], timeout=timeout)


def profile_now(client=linkcond) -> str:
    """The default condition's profile, "off", or what went wrong reading it."""
    done = client("status", "--json")
    try:
        document = json.loads(done.out)
    except ValueError:
        return f"no answer ({done.describe()})"
    return document["profile"]["name"] if document.get("active") else "off"


class HostNamespace:
    """This machine's own network namespace, where a `ProbeServer` or `Probes` takes a
    `Namespace` (the systemd VM's interfaces are in the container's own namespace)."""

    name = "host"

    def argv(self, *argv) -> list[str]:
        return [str(a) for a in argv]

    def run(self, *argv, timeout: float = 60, input: str | None = None) -> Result:
        return run(self.argv(*argv), timeout=timeout, input=input)


# ---------------------------------------------------------------- the journal

@dataclass
class Entry:
    pid: str
    priority: str
    message: str
    monotonic: int


class Journal:
    """The journal from the moment this object was made (its cursor then)."""

    def __init__(self):
        last = run(["journalctl", "-n", "1", "-o", "json", "--no-pager"], timeout=60)
        try:
            self.cursor = json.loads(last.out.strip().splitlines()[-1])["__CURSOR"]
        except (ValueError, IndexError, KeyError):
            raise HarnessError(f"no cursor from the journal: {last.describe()}") from None

    def entries(self, unit: str | None = SERVICE) -> list[Entry]:
        """Every entry since the cursor (of UNIT: its processes' lines and systemd's about it)."""
        done = run(["journalctl", *(["-u", unit] if unit else []), f"--after-cursor={self.cursor}", "-o", "json",
                    "--no-pager"], timeout=120)
        if done.rc not in (0, 1):
            raise HarnessError(f"the journal could not be read: {done.describe()}")
        found = []
        for line in done.out.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("MESSAGE")
            if isinstance(message, list):  # bytes that are not UTF-8
                message = bytes(message).decode(errors="replace")
            found.append(Entry(str(entry.get("_PID", "")), str(entry.get("PRIORITY", "")), message or "",
                               int(entry.get("__MONOTONIC_TIMESTAMP", 0))))
        return found


# ---------------------------------------------------------------- the units, for a test

def veth(name: str, peer: str) -> None:
    """A veth pair NAME/PEER in this namespace, both up (deleted first if there)."""
    run(["ip", "link", "del", name])
    run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer]).ok()
    run(["ip", "link", "set", name, "up"]).ok()
    run(["ip", "link", "set", peer, "up"]).ok()


class TestUnits:
    """linkcondd.service and linkcondd.socket as `make install` writes them, pointing at the
    binaries under test, in /run/systemd/system, with a drop-in: the daemon's options (its
    interface, the shipped profiles and the test's own in FILES/profiles), and an observer run
    after `linkcondd --cleanup` (ExecStopPost=) that records why the service stopped and the
    interface then, in FILES/stoppost."""

    __test__ = False

    def __init__(self, interface: str, files: Path):
        self.interface = interface
        self.files = files
        self.profiles = files / "profiles"
        self.stoppost = files / "stoppost"
        self.dropins = RUNTIME_UNITS / f"{SERVICE}.d"
        self.device = Device(interface, ("lc-" + interface)[:15])

    def install(self, profiles: dict[str, str]) -> "TestUnits":
        require_systemd()
        if str(BIN).startswith(HIDDEN_FROM_SERVICE):
            raise HarnessError(f"{BIN} is hidden from the service by PrivateTmp=/ProtectHome=; build elsewhere")
        self.profiles.mkdir(parents=True, exist_ok=True)
        self.stoppost.mkdir(parents=True, exist_ok=True)
        for name, text in profiles.items():
            (self.profiles / name).write_text(text)
        observer = self.files / "observe-stop"
        observer.write_text(f"#!/bin/sh\ncd {KERNEL_TESTS} && exec /usr/bin/python3 -m harness.systemd observe-stop "
                            f"{self.interface} {self.stoppost}\n")
        observer.chmod(0o755)
        self.dropins.mkdir(parents=True, exist_ok=True)
        template = (REPO / "systemd" / "linkcondd.service.in").read_text()
        (RUNTIME_UNITS / SERVICE).write_text(template.replace("@BINDIR@", str(BIN)))
        (RUNTIME_UNITS / SOCKET).write_text((REPO / "systemd" / "linkcondd.socket").read_text())
        # EnvironmentFile= is reset: an installed linkcond's /etc/default/linkcondd would override
        # the test's options.
        self.dropin("test.conf", f"""[Service]
EnvironmentFile=
Environment="LINKCONDD_OPTIONS=--interface {self.interface} --profiles {REPO / 'profiles'} --profiles {self.profiles}"
ReadWritePaths={self.stoppost}
ExecStopPost={observer}
""")
        run(["systemd-sysusers", REPO / "systemd" / "linkcond.sysusers"]).ok()
        return self.reload()

    def dropin(self, name: str, text: str) -> None:
        (self.dropins / name).write_text(text)

    def remove_dropin(self, name: str) -> None:
        (self.dropins / name).unlink(missing_ok=True)

    def reload(self) -> "TestUnits":
        systemctl("daemon-reload").ok()
        return self

    def stop(self) -> None:
        """Service and socket stopped, their failures forgotten."""
        systemctl("stop", *UNITS, timeout=180)
        systemctl("reset-failed", *UNITS)
        if not wait_state("inactive", SERVICE, 60) or not wait_state("inactive", SOCKET, 60):
            raise HarnessError(f"the units did not stop: {state(SERVICE)}, {state(SOCKET)}")

    def uninstall(self) -> None:
        systemctl("stop", *UNITS, timeout=180)
        for path in (RUNTIME_UNITS / SERVICE, RUNTIME_UNITS / SOCKET):
            path.unlink(missing_ok=True)
        for dropin in self.dropins.glob("*"):
            dropin.unlink()
        self.dropins.rmdir() if self.dropins.exists() else None
        systemctl("daemon-reload")
        systemctl("reset-failed", *UNITS)

    # What the observer recorded at the last stop.

    def clear_stop_record(self) -> None:
        for name in ("result", "snapshot"):
            (self.stoppost / name).unlink(missing_ok=True)

    def stop_result(self) -> str:
        return (_read(self.stoppost / "result") or "did not run").strip()

    def stop_snapshot(self) -> str | None:
        """`harness.tc.snapshot`'s text, as the observer took it."""
        return _read(self.stoppost / "snapshot")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def observe_stop(interface: str, directory: str) -> None:
    """Why the service stopped, and the interface then (see the module's doc comment)."""
    out = Path(directory)
    (out / "result").write_text(" ".join(os.environ.get(v, "-") for v in ("SERVICE_RESULT", "EXIT_CODE", "EXIT_STATUS")))
    try:
        text = snapshot(Device(interface, ("lc-" + interface)[:15]))
    except HarnessError as error:
        text = f"unreadable: {error}"
    (out / "snapshot").write_text(text)


# ---------------------------------------------------------------- the machine as files

#: Where an installation may leave files: what `make install` and the package write, and
#: systemd's own configuration.
WATCHED = ("/usr/local", "/usr/bin", "/usr/sbin", "/usr/share/linkcond", "/usr/share/man/man1",
           "/usr/share/bash-completion", "/usr/share/zsh", "/usr/share/fish", "/usr/lib/sysusers.d",
           "/usr/lib/tmpfiles.d", "/lib/systemd/system", "/etc", "/var/lib", "/run/linkcond",
           "/run/systemd/system")
#: Paths that change by themselves while the machine runs, whatever is installed.
CHURN = ("/var/lib/systemd/", "/var/lib/dpkg/", "/var/lib/apt/", "/var/lib/ucf/", "/etc/ld.so.cache",
         "/var/lib/man-db/", "/etc/.pwd.lock", "/etc/group-", "/etc/gshadow-", "/etc/passwd-", "/etc/shadow-",
         "/var/lib/private/", "/var/lib/polkit-1/")


def file_tree(roots: Iterable[str] = WATCHED, ignore: Iterable[str] = CHURN) -> set[str]:
    """Every path under ROOTS (files, directories, links), but those under IGNORE."""
    ignore = tuple(ignore)

    def ignored(path: str) -> bool:
        return path.startswith(ignore) or path + "/" in ignore

    paths: set[str] = set()
    for root in roots:
        if not os.path.lexists(root):
            continue
        paths.add(root)
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not ignored(os.path.join(directory, d))]
            paths.update(p for p in (os.path.join(directory, n) for n in dirs + files) if not ignored(p))
    return paths


def group_exists(name: str = "linkcond") -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def units_known(pattern: str = "linkcondd*") -> list[str]:
    """The units systemd knows by PATTERN: loaded ones and unit files."""
    loaded = systemctl("list-units", "--all", "--plain", "--no-legend", pattern).ok().out
    files = systemctl("list-unit-files", "--plain", "--no-legend", pattern)
    # list-unit-files exits 1 when nothing matches.
    if files.rc not in (0, 1):
        raise HarnessError(f"systemd's unit files could not be listed: {files.describe()}")
    names = {line.split()[0] for line in (loaded + files.out).splitlines() if line.strip()}
    return sorted(names)


#: `make install`'s default prefix, and what docs/operations.md says `make uninstall` keeps
#: (yours: settings, profiles and scenarios, the history; and the group).
PREFIX = "/usr/local"
KEPT_BY_UNINSTALL = ("/etc/default/linkcondd", "/etc/linkcond", "/var/lib/linkcond")


def package_status() -> str:
    """dpkg's status of linkcond and its version (`install ok installed 0.4.0`), or ''."""
    done = run(["dpkg-query", "-W", "-f=${Status} ${Version}", "linkcond"])
    return done.out.strip() if done.rc == 0 else ""


def bare_machine() -> None:
    """No linkcond at all: the package purged, `make install`'s files gone, no state, settings,
    group, console user or units left (the harness makes the group for other modules at its start)."""
    if package_status() not in ("", "unknown ok not-installed"):
        run(["dpkg", "--purge", "linkcond"], timeout=600).ok()
    if os.path.lexists(f"{PREFIX}/bin/linkcondd") or os.path.lexists(f"{PREFIX}/lib/systemd/system/{SERVICE}"):
        run(["make", "-C", REPO, "--no-print-directory", "uninstall"], timeout=300).ok()
    run(["rm", "-rf", *KEPT_BY_UNINSTALL, "/run/linkcond"]).ok()
    # The console's user first: a group cannot go while it is a user's primary group.
    if run(["getent", "passwd", "linkcond-console"]).rc == 0:
        run(["userdel", "linkcond-console"]).ok()
    if group_exists():
        run(["groupdel", "linkcond"]).ok()
    systemctl("daemon-reload").ok()
    systemctl("reset-failed", SERVICE, SOCKET)
    left = sorted(p for p in file_tree() if "linkcond" in p)
    if left or units_known():
        raise HarnessError(f"linkcond is still here: {left[:10]}, units {units_known()}")


def build_is_current() -> None:
    """`make install` here must install what the host built, not build in the VM."""
    stale = run(["make", "-C", REPO, "-q", ".build/generated/.complete"], timeout=120)
    if stale.rc != 0:
        raise HarnessError("the host's build is not complete (the man pages and completions of .build/generated, "
                           "or binaries older than the sources): run `make` on the host")



if __name__ == "__main__":  # pragma: no cover - the units' observer
    if len(sys.argv) == 4 and sys.argv[1] == "observe-stop":
        observe_stop(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: python3 -m harness.systemd observe-stop INTERFACE DIR")
