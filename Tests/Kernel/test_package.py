"""linkcond installed the ways a user installs it, under a real systemd: the Debian package that
`make deb` builds, and `make install` from the source tree.

The package: `apt install ./linkcond_*.deb` creates the group and the directories and starts the
socket; `activate` and `off` reach the daemon through socket activation; an upgrade stops the
daemon (nothing stays shaped) and restarts the socket, and leaves a disabled one so; removing
stops it all and leaves nothing shaped; purging removes its state and keeps your own profiles.

`make install`, enable, use, `make uninstall`: nothing of linkcond's stays under the prefix,
systemd knows no linkcondd unit, nothing is shaped, and what docs/operations.md says stays
(/etc/default/linkcondd, /etc/linkcond, the history, the group) stays, and only that.

The daemon shapes the interface of the default route: lcpk0, one end of a veth pair in the
systemd container's namespace. The container stands in for a stock Debian machine. All of it in
one VM, in this order, each test starting from where the one before left the machine: a VM of
its own for the removal or `make install` would cost its boot and an installation, more than
the minutes it would save beside the others on two CPUs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.system import REPO, SHIPPED_SCENARIOS, HarnessError, run
from harness.systemd import (KEPT_BY_UNINSTALL, PREFIX, SERVICE, SOCKET, bare_machine, build_is_current, file_tree,
                             group_exists, package_status, prop, require_systemd, systemctl, units_known, veth)
from harness.tc import Device, qdiscs, same_as, snapshot

VM = "systemd"
#: Built on the host first (the package `make deb` left in the repository's root): make test builds it beside the functional phase.
HOST_BUILDS = ("deb",)
CHECKS = 49

INTERFACE, PEER = "lcpk0", "lcpk1"
DEVICE = Device(INTERFACE, "lc-" + INTERFACE)
ARCH = run(["dpkg", "--print-architecture"]).out.strip()
CLIENT = Path("/usr/bin/linkcond")


def the_package() -> Path:
    """The one package `make deb` (scripts/deb) left in the repository's root."""
    found = sorted(REPO.glob(f"linkcond_*_{ARCH}.deb"))
    if len(found) != 1:
        raise HarnessError(f"not exactly one linkcond_*_{ARCH}.deb in {REPO} ({len(found)}): run `make deb` on the host")
    return found[0]


def apt_get(work: Path, *args: str):
    """apt-get, non-interactive, given no package lists: the package's dependencies are installed
    (dpkg's own database says so), and parsing the image's lists takes a while (minutes under qemu's
    emulation)."""
    (work / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    return run(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", f"Dir::State::Lists={work / 'lists'}",
                *args], timeout=900)


def installed_version() -> str | None:
    status = package_status()
    return status.split()[-1] if status.startswith("install ok installed ") else None


def client(*args: str):
    return run([CLIENT, *args], timeout=180)


def profile_on() -> str:
    done = client("status", "--interface", INTERFACE, "--json")
    try:
        document = json.loads(done.out)
    except ValueError:
        return f"no answer ({done.describe()})"
    return document["profile"]["name"] if document.get("active") else "off"


def netems() -> int:
    return sum(1 for q in qdiscs(DEVICE, stats=False) if q.get("kind") == "netem")


def exists(path: str) -> str:
    return "present" if os.path.lexists(path) else "absent"


def in_force(check, name: str, now: str, unshaped: str) -> bool:
    """A positive control before a "nothing left": the tree made a difference to remove."""
    return check.true(name, now != unshaped, "differs" if now != unshaped else "identical",
                      "differs from the interface unshaped")


# ---------------------------------------------------------------- the machine

@pytest.fixture(scope="module")
def machine(work):
    """This container as a stock Debian machine with the default route on lcpk0. The host tree
    it boots from is a Docker image, whose policy-rc.d forbids maintainer scripts to start
    services and whose docker-clean keeps apt from caching its lists (each apt command would
    parse them all again): a stock machine has neither. man-db's index is left alone (rebuilding
    it takes minutes under qemu's emulation). The changes vanish with the container."""
    require_systemd()
    for path in ("/usr/sbin/policy-rc.d", "/etc/apt/apt.conf.d/docker-clean", "/var/lib/man-db/auto-update"):
        Path(path).unlink(missing_ok=True)
    run(["modprobe", "-a", "sch_netem", "sch_htb", "ifb", "act_mirred", "cls_u32", "cls_flower", "veth"])
    veth(INTERFACE, PEER)
    run(["ip", "addr", "add", "10.89.0.1/24", "dev", INTERFACE]).ok()
    run(["ip", "route", "replace", "default", "via", "10.89.0.2", "dev", INTERFACE]).ok()
    yield snapshot(DEVICE)
    run(["ip", "link", "del", INTERFACE])


@pytest.fixture(scope="module")
def unshaped(machine) -> str:
    """lcpk0 as made, before any daemon."""
    return machine


@pytest.fixture
def bare(machine) -> None:
    bare_machine()


@pytest.fixture(scope="module")
def package() -> tuple[str, Path]:
    """The package's version and file."""
    built = the_package()
    return run(["dpkg-deb", "-f", built, "Version"]).ok().out.strip(), built


@pytest.fixture(scope="module")
def packages(package, work) -> dict[str, Path]:
    """The package, and the same with a higher version standing in for the next build
    (uncompressed: xz's compression is most of a repacking's time)."""
    version, built = package
    tree = work / "next"
    run(["rm", "-rf", tree]).ok()
    run(["dpkg-deb", "-R", built, tree]).ok()
    control = tree / "DEBIAN" / "control"
    control.write_text(control.read_text().replace(f"Version: {version}\n", f"Version: {version}+next\n"))
    following = work / "linkcond_next.deb"
    run(["dpkg-deb", "-Znone", "-b", tree, following], timeout=600).ok()
    return {version: built, f"{version}+next": following}


@pytest.fixture
def installed(machine, package, work) -> str:
    """linkcond's package installed (this version or the next), the socket enabled and
    listening, nothing in force; installed from the file when it is not (over what a removal
    kept, as a user installs it again; on a bare machine otherwise)."""
    if installed_version() is None:
        if not package_status().startswith("deinstall ok config-files "):
            bare_machine()
        apt_get(work, "install", "-y", str(package[1])).ok()
    systemctl("enable", "--now", SOCKET).ok()
    if client("off", "--all").rc != 0:
        raise HarnessError(f"linkcond off --all: {client('off', '--all').describe()}")
    return installed_version()


# ---------------------------------------------------------------- the package

@pytest.mark.checks(6)
def test_install_from_the_file(check, bare, package, work):
    """`apt install ./linkcond_*.deb` on a machine without linkcond: installed, the group
    created, the socket enabled and listening with the service waiting for a request, the
    directories of tmpfiles.d made, man pages, completions and built-in profiles in place."""
    version, built = package
    group_before = group_exists()
    done = apt_get(work, "install", "-y", str(built))
    check.exit_status(f"apt-get install {built.name}", done, 0)
    check.equal("the package's state", f"install ok installed {version}",
                package_status())
    check.equal("the linkcond group: made by the package", "absent before, present after",
                f"{'present' if group_before else 'absent'} before, {'present' if group_exists() else 'absent'} after")
    check.equal("socket enabled and listening, service waiting for a request", "enabled listening inactive",
                f"{systemctl('is-enabled', SOCKET).out.strip()} {prop('SubState', SOCKET)} {prop('ActiveState')}")
    check.equal("directories of tmpfiles.d: /etc/linkcond/profiles and scenarios, /var/lib/linkcond",
                "present present present",
                " ".join(exists(p) for p in ("/etc/linkcond/profiles", "/etc/linkcond/scenarios", "/var/lib/linkcond")))
    completion = Path("/usr/share/bash-completion/completions/linkcond")
    profile = Path("/usr/share/linkcond/profiles/slow-net.yaml")
    check.equal("man pages, completions and built-in profiles in place", "/usr/share/man/man1/linkcond.1.gz yes yes",
                f"{run(['man', '-w', 'linkcond']).output.strip()} "
                f"{'yes' if completion.exists() and completion.stat().st_size else 'no'} "
                f"{'yes' if profile.exists() and profile.stat().st_size else 'no'}")


@pytest.mark.checks(9)
def test_activate_and_off_through_socket_activation(check, installed, unshaped):
    """The installed client starts the daemon by its request, shapes the default route's
    interface and turns it off; the built-in scenarios are read beside the built-in profiles;
    a profile of /etc/linkcond names a trace the package installed, by its path."""
    check.exit_status(f'linkcond activate "Slow Net" (the default route\'s {INTERFACE})', client("activate", "Slow Net"), 0)
    check.equal("the service started by the request", "active", prop("ActiveState"))
    check.equal(f"{INTERFACE} under Slow Net, its netems", "Slow Net 2", f"{profile_on()} {netems()}")
    check.exit_status("linkcond off", client("off"), 0)
    same_as(check, f"after off: {INTERFACE} as before", unshaped, snapshot(DEVICE))
    listing = client("scenarios", "--json")
    try:
        document = json.loads(listing.out)
        scenarios = f"{len(document['scenarios'])} scenarios, {len(document['problems'])} skipped"
    except (ValueError, KeyError):
        scenarios = f"no answer ({listing.describe()})"
    check.equal("the built-in scenarios, read beside the built-in profiles",
                f"{len(list(SHIPPED_SCENARIOS.glob('*.yaml')))} scenarios, 0 skipped", scenarios)
    commute = Path("/etc/linkcond/profiles/lc-commute.yaml")
    commute.write_text("name: LC Commute\ndownlink: { trace: /usr/share/linkcond/traces/steps.trace, delay: 40ms }\n")
    try:
        client("reload").ok()
        check.exit_status("activate a profile of /etc/linkcond naming /usr/share/linkcond/traces/steps.trace",
                          client("activate", "LC Commute"), 0)
        check.contains("its status: where the trace is", client("status").out, "trace: ")
        client("off").ok()
    finally:
        commute.unlink()
    same_as(check, f"after the trace's off: {INTERFACE} as before", unshaped, snapshot(DEVICE))


@pytest.mark.checks(6)
def test_upgrade_stops_the_daemon_and_restarts_the_socket(check, installed, packages, work, unshaped):
    """Installing the next version stops the running daemon (which removes its shaping) and
    restarts the socket; the next request starts the new daemon."""
    (base, package), (following, next_package) = packages.items()
    if installed != base:
        apt_get(work, "install", "-y", "--allow-downgrades", str(package)).ok()
        systemctl("enable", "--now", SOCKET).ok()
    check.exit_status('linkcond activate "Nasty Net"', client("activate", "Nasty Net"), 0)
    socket_since = prop("ActiveEnterTimestampMonotonic", SOCKET)
    check.exit_status("apt-get install the next version", apt_get(work, "install", "-y", str(next_package)), 0)
    check.equal("the version installed", following, installed_version())
    restarted = "restarted" if prop("ActiveEnterTimestampMonotonic", SOCKET) != socket_since else "not restarted"
    check.equal("the old daemon stopped, the socket restarted and listening", "inactive listening restarted",
                f"{prop('ActiveState')} {prop('SubState', SOCKET)} {restarted}")
    same_as(check, f"after the upgrade: {INTERFACE} as before", unshaped, snapshot(DEVICE))
    activated = client("activate", "Nasty Net")
    check.equal("the new daemon, started by the request, takes a profile", "0 active Nasty Net 2",
                f"{activated.rc} {prop('ActiveState')} {profile_on()} {netems()}")


@pytest.mark.checks(3)
def test_reinstall_leaves_a_disabled_socket_disabled(check, installed, packages, work):
    """A socket the administrator disabled stays disabled and stopped through a reinstall;
    enabled again by hand, the daemon takes a profile."""
    systemctl("disable", "--now", SOCKET, SERVICE).ok()
    done = apt_get(work, "install", "-y", "--reinstall", str(packages[installed]))
    check.exit_status("apt-get install --reinstall", done, 0)
    check.equal("the socket disabled and stopped as it was", "disabled inactive",
                f"{systemctl('is-enabled', SOCKET).out.strip()} {prop('ActiveState', SOCKET)}")
    systemctl("enable", "--now", SOCKET).ok()
    activated = client("activate", "Slow Net")
    check.equal("enabled again by hand: the daemon takes a profile", "0 Slow Net", f"{activated.rc} {profile_on()}")


@pytest.mark.checks(5)
def test_remove_stops_it_all(check, installed, work, unshaped):
    """`apt remove` with a condition in force: service and socket stopped, nothing shaped, the
    binaries gone; settings, the profiles directory and the history kept until a purge."""
    client("activate", "Slow Net").ok()
    in_force(check, "Slow Net in force before the removal", snapshot(DEVICE), unshaped)
    check.exit_status("apt-get remove linkcond", apt_get(work, "remove", "-y", "linkcond"), 0)
    check.equal("service and socket stopped", "inactive inactive", f"{prop('ActiveState')} {prop('ActiveState', SOCKET)}")
    same_as(check, f"after remove: {INTERFACE} as before", unshaped, snapshot(DEVICE))
    check.equal("binaries gone; settings, profiles directory and history kept until purge",
                "absent present present present",
                " ".join(exists(p) for p in ("/usr/bin/linkcondd", "/etc/default/linkcondd", "/etc/linkcond/profiles",
                                             "/var/lib/linkcond")))


@pytest.mark.checks(5)
def test_purge_removes_state_and_keeps_your_profiles(check, installed, work, unshaped):
    """`apt purge` with a condition in force: nothing shaped; settings, history and runtime
    state gone; a profile of your own kept; the package forgotten."""
    mine = Path("/etc/linkcond/profiles/mine.yaml")
    mine.write_text("name: Mine\ndownlink: { delay: 10ms }\n")
    client("activate", "Slow Net").ok()
    in_force(check, "Slow Net in force before the purge", snapshot(DEVICE), unshaped)
    check.exit_status("apt-get purge linkcond", apt_get(work, "purge", "-y", "linkcond"), 0)
    check.equal("settings, history and runtime state gone; your profile kept", "absent absent absent present",
                " ".join(exists(p) for p in ("/etc/default/linkcondd", "/var/lib/linkcond", "/run/linkcond", str(mine))))
    check.equal("the package forgotten", "not installed", installed_version() or "not installed")
    same_as(check, f"after purge: {INTERFACE} as before", unshaped, snapshot(DEVICE))


# ---------------------------------------------------------------- make install, make uninstall

def make(*targets: str):
    return run(["make", "-C", REPO, "--no-print-directory", *targets], timeout=600)


def empty_directory(path: str) -> bool:
    """A directory with nothing in it but empty directories."""
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    return all(not files for _, _, files in os.walk(path))


@pytest.mark.checks(15)
def test_make_uninstall_leaves_nothing(check, bare, unshaped):
    """`make install`, the socket enabled, a condition in force and in the history, then `make
    uninstall`: nothing of linkcond's left under the prefix (binaries, units, completions, man
    pages, profiles), systemd knows no linkcondd unit, nothing shaped; what docs/operations.md
    says stays, stays (/etc/default/linkcondd, /etc/linkcond, the history, the group), and
    nothing else of it (directories the install made for others, left empty, aside)."""
    build_is_current()
    before = file_tree()
    check.exit_status("make install", make("install"), 0)
    check.exit_status("systemctl enable --now linkcondd.socket", systemctl("enable", "--now", SOCKET), 0)
    installed_client = Path(PREFIX) / "bin" / "linkcond"
    check.exit_status(f'{installed_client} activate "Slow Net"', run([installed_client, "activate", "Slow Net"], timeout=180), 0)
    in_force(check, "Slow Net in force before the uninstall", snapshot(DEVICE), unshaped)
    history = Path("/var/lib/linkcond/history.jsonl")
    check.true("the change is in the history", history.exists() and "Slow Net" in history.read_text(),
               "recorded" if history.exists() and "Slow Net" in history.read_text() else "not recorded",
               f"a line in {history}")

    check.exit_status("make uninstall", make("uninstall"), 0)
    after = file_tree()
    new = sorted(after - before)
    gone = sorted(before - after)
    under_prefix = [p for p in new if p.startswith(PREFIX + "/") and not empty_directory(p)]
    check.equal(f"nothing of linkcond's left under {PREFIX}", [], under_prefix)
    kept = list(KEPT_BY_UNINSTALL)
    check.equal("kept, as documented: /etc/default/linkcondd, /etc/linkcond, the history",
                "present present present", " ".join(exists(p) for p in kept))
    check.equal("the history kept", "kept", "kept" if history.exists() and history.stat().st_size else "gone")
    check.true("the linkcond group kept", group_exists(), "present" if group_exists() else "absent", "present")
    documented = tuple(p + "/" for p in kept)
    others = [p for p in new if not (p in kept or p.startswith(documented)) and not empty_directory(p)]
    check.equal("nothing else left, anywhere an installation writes", [], others)
    check.equal("nothing that was there before is gone", [], gone)
    check.equal("systemd knows no linkcondd unit", [], units_known())
    check.equal("service and socket stopped", "inactive inactive", f"{prop('ActiveState')} {prop('ActiveState', SOCKET)}")
    same_as(check, f"after uninstall: {INTERFACE} as before", unshaped, snapshot(DEVICE))
    empty = [p for p in new if empty_directory(p) and not p.startswith(documented) and p not in kept]
    print(f"make uninstall left these directories, empty: {empty or 'none'}")
