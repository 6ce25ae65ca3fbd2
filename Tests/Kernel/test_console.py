"""The console in the browser (`linkcond console`), driven in a real browser: Debian's headless
Chromium through chromedriver (selenium), under User-mode Linux with a real netem.

On the desktop, the console serves the module's daemon on 127.0.0.1: a viewer sees the
conditions; an operator, signed in with a token from `linkcond console token`, switches the
client's interface to Slow Net with the picker, and the kernel is shaped (netem's 100 ms in
both directions, htb's 32 kbit, a probe's round trip); the graph moves while traffic flows; a
profile made in the form (a bad value first: its field's error) is one `linkcond list` shows.

On a gateway (a router namespace, two device namespaces behind its LAN), a second daemon and a
console with `--devices-on` run in the router, as they would on a real one: each device opens
the console from its own address and may set its own condition, not the other's; a machine not
behind the gateway is told so and may change nothing; an operator may change any device.

Hostile: changes from another site or without the page's secret, a brute-forced sign-in, an
oversized and a slow request, a flood of connections.

Screenshots (desktop and phone sizes) go to .build/test-logs/kernel/console/, from where
docs/console/ takes the ones it shows.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from harness.browser import DESKTOP, PHONE, as_phone, chrome, overflow, text, wait_for
from harness.daemon import Daemon
from harness.gateway import Gateway, build_gateway
from harness.probes import udp_target
from harness.system import BIN, KERNEL_TESTS, REPO, HarnessError, spawn, stop, wait_until
from harness.tc import Device, tc

CHECKS = 17 + 8 + 12

PORT = 8053
#: Beside the VM's logs, the one directory of the host the guest writes to.
SHOTS = Path(os.environ.get("LC_CHECKS_LOG", REPO / ".build" / "test-logs" / "kernel" / "checks")).parent / "console"
DEVICE_PROFILE = "LC Console Device"
PROFILES = {
    "lc-console-device.yaml": f"name: {DEVICE_PROFILE}\ndownlink: {{ delay: 40ms }}\nuplink: {{ delay: 10ms }}\n",
}
MADE = "LC Console Made"
HOSTILE = '<img src=x onerror="window.pwned=1">'


class Console:
    """`linkcond console` for DAEMON, in NAMESPACE (None: this one), until stopped."""

    def __init__(self, daemon: Daemon, work: Path, listen: str, namespace=None, devices_on: str | None = None):
        self.token_socket = work / "console-token.sock"
        argv = [str(BIN / "linkcond"), "console", "--socket", str(daemon.socket), "--listen", listen,
                "--token-socket", str(self.token_socket)] + (["--devices-on", devices_on] if devices_on else [])
        self.log = work / "console.log"
        self.namespace = namespace
        with self.log.open("w") as out:
            self.process = spawn(namespace.argv(*argv) if namespace else argv, stdout=out, stderr=subprocess.STDOUT)
        if not wait_until(lambda: "linkcond console: http" in self.log.read_text() or self.process.poll() is not None, 60):
            raise HarnessError(f"the console did not start: {self.log.read_text()[-400:]}")
        if self.process.poll() is not None:
            raise HarnessError(f"the console exited: {self.log.read_text()[-400:]}")
        self.url = self.log.read_text().split("linkcond console: ", 1)[1].split()[0]

    def token(self) -> str:
        argv = [str(BIN / "linkcond"), "console", "token", "--token-socket", str(self.token_socket), "--for", "10m"]
        done = subprocess.run(self.namespace.argv(*argv) if self.namespace else argv, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise HarnessError(f"linkcond console token: {done.stderr}")
        return done.stdout.strip()

    def stop(self) -> None:
        stop(self.process)


def http_request(host: str, method: str, path: str, body=None, headers=None, port: int = PORT) -> tuple[int, dict, dict]:
    """One request to the console: status, JSON answer (or {}), headers."""
    connection = http.client.HTTPConnection(host, port, timeout=30)
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    answer = connection.getresponse()
    raw = answer.read()
    connection.close()
    try:
        document = json.loads(raw)
    except ValueError:
        document = {}
    return answer.status, document, dict(answer.getheaders())


def profile_in_force(daemon: Daemon, *target: str) -> str:
    done = daemon.cli("status", *target, "--json")
    try:
        status = json.loads(done.out)
    except ValueError:
        return f"unreadable ({done.describe()})"
    return status["profile"]["name"] if status.get("active") else "off"


def netem_delays(device: Device, dev: str) -> list[str]:
    import re
    return sorted(set(re.findall(r"qdisc netem \S+ .*?\bdelay ([0-9.]+m?s)", tc(device, "qdisc", "show", "dev", dev))))


@pytest.fixture(scope="module")
def console(linkcondd, work):
    running = Console(linkcondd, work, f"127.0.0.1:{PORT}")
    yield running
    running.stop()


@pytest.fixture
def browser():
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver = chrome(DESKTOP)
    yield driver
    driver.quit()


# ---------------------------------------------------------------- the desktop

@pytest.mark.checks(17)
def test_desktop_console(check, daemon, console, browser, device, topo, probes):
    """A viewer sees the condition and no switch; an operator signs in with a CLI token, puts
    Slow Net in force with the picker and the switch, and the kernel has it; the graph moves
    while probes flow; a profile made in the form is refused for a bad value, naming the field,
    then saved and listed by the CLI; a hostile profile name is shown as text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    driver = browser
    interface = topo.interface
    driver.get(console.url)
    card = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'li.condition[data-id="{interface}"]'), 60)
    weight = driver.execute_script("""
        const entries = [performance.getEntriesByType('navigation')[0],
                         ...performance.getEntriesByType('resource').filter(e => e.initiatorType !== 'fetch')];
        const paint = performance.getEntriesByName('first-contentful-paint')[0];
        return {bytes: entries.reduce((sum, e) => sum + e.encodedBodySize, 0), files: entries.length,
                paint: paint ? Math.round(paint.startTime) : null};""")
    check.true("the page weighs under 40 KB, all its files (its API answers aside; first paint measured)",
               weight["bytes"] <= 40 * 1024 and weight["paint"] is not None,
               f"{weight['bytes']} bytes in {weight['files']} files, first contentful paint {weight['paint']} ms (User-mode Linux)", "<= 40960 bytes")
    check.true("the page lists the daemon's condition, off", bool(card) and "off" in card.text, card.text if card else "no card", f"a card for {interface}, off")
    switch = card.find_element(By.CSS_SELECTOR, ".switch") if card else None
    check.true("a viewer sees no switch", switch is not None and not switch.is_displayed() and text(driver, "who").startswith("Viewer"),
               f"{text(driver, 'who')}, switch {'shown' if switch and switch.is_displayed() else 'hidden'}", "Viewer, switch hidden")

    driver.find_element(By.ID, "token").send_keys(console.token())
    driver.find_element(By.CSS_SELECTOR, "#sign-in button").click()
    check.true("signed in with a token from `linkcond console token`", bool(wait_for(lambda: text(driver, "who") == "Operator")), text(driver, "who"), "Operator")

    Select(card.find_element(By.CSS_SELECTOR, "select")).select_by_visible_text("Slow Net")
    card.find_element(By.CSS_SELECTOR, ".switch").click()
    wait_until(lambda: profile_in_force(daemon) == "Slow Net", 60)
    check.equal("the switch put Slow Net in force (linkcond status)", "Slow Net", profile_in_force(daemon))
    check.equal("the kernel has Slow Net's 100 ms both ways (netem on the interface and its IFB; DNS's 100 + 200 ms)",
                [["100ms", "300ms"], ["100ms"]], [netem_delays(device, device.interface), netem_delays(device, device.ifb)])
    rtt = probes.rtt([udp_target(topo.s4)], rounds=6, interval=0.3, timeout=3)[udp_target(topo.s4)]
    check.true("a probe's round trip is Slow Net's (the fastest of 6: 200 ms of delay and 32 kbit/s each way)",
               rtt.min_ms is not None and 200 <= rtt.min_ms <= 300, rtt.min_ms, "200 to 300 ms")
    check.true("the card says Slow Net", bool(wait_for(lambda: "Slow Net" in card.text)), card.text[:200], "mentions Slow Net")

    # Traffic while the page watches: the downlink's line leaves the baseline, its legend a rate.
    flow = threading.Thread(target=lambda: probes.rtt([udp_target(topo.s4)], rounds=60, interval=0.1, timeout=3))
    flow.start()
    moved = wait_for(lambda: any(float(p.split(",")[1]) < 99 for p in (card.find_element(By.CSS_SELECTOR, "polyline.down").get_attribute("points") or "").split()), 60)
    legend = card.find_element(By.CSS_SELECTOR, ".legend").text
    check.true("the graph moved while traffic flowed (a point off the baseline, a rate in the legend)",
               bool(moved) and "bit/s" in legend.split("up")[0], legend, "a point off the baseline, down N bit/s")
    driver.save_screenshot(str(SHOTS / "desktop-conditions.png"))
    flow.join()

    # A profile from the form: a bad loss first, then a good one.
    driver.find_element(By.ID, "new-profile").click()
    driver.find_element(By.ID, "p-name").send_keys(MADE)
    driver.find_element(By.ID, "p-downlink-delay").send_keys("30ms")
    driver.find_element(By.ID, "p-downlink-loss").send_keys("120%")
    driver.find_element(By.CSS_SELECTOR, "#profile-form button[type=submit]").click()
    error = wait_for(lambda: text(driver, "e-downlink-loss"))
    check.true("a bad value: the error under its own field names the field and the value",
               bool(error) and "downlink.loss" in error and "120%" in error, error, "names downlink.loss and 120%")
    check.equal("nothing saved for it", False, (daemon.profiles / "lc-console-made.yaml").exists())
    driver.save_screenshot(str(SHOTS / "desktop-profile-error.png"))
    loss = driver.find_element(By.ID, "p-downlink-loss")
    loss.clear()
    loss.send_keys("1%")
    driver.find_element(By.CSS_SELECTOR, "#profile-form button[type=submit]").click()
    wait_for(lambda: "Saved" in text(driver, "notice"))
    listed = daemon.cli("list", "--json")
    names = {p["name"]: p.get("readOnly", False) for p in json.loads(listed.out)["profiles"]} if listed.rc == 0 else {}
    check.equal("the form's profile is one `linkcond list` shows, writable", False, names.get(MADE, "missing"))
    check.true("its file in the daemon's profile directory", (daemon.profiles / "lc-console-made.yaml").exists(),
               sorted(p.name for p in daemon.profiles.iterdir()), "lc-console-made.yaml")

    hostile = Path(daemon.work) / "hostile.yaml"
    hostile.write_text(f"name: {json.dumps(HOSTILE)}\ndownlink: {{ delay: 1ms }}\n")
    saved = daemon.cli("profile", "save", str(hostile))
    driver.refresh()
    shown = wait_for(lambda: HOSTILE in driver.find_element(By.ID, "profiles").text, 60)
    check.true("a profile named like markup is shown as its text, never run",
               saved.rc == 0 and bool(shown) and not driver.find_elements(By.CSS_SELECTOR, "#profiles img")
               and driver.execute_script("return window.pwned === undefined"),
               f"saved {saved.rc}, shown {bool(shown)}, img {len(driver.find_elements(By.CSS_SELECTOR, '#profiles img'))}", "text, no element, no script")
    daemon.cli("profile", "delete", HOSTILE)
    driver.save_screenshot(str(SHOTS / "desktop-profiles.png"))
    as_phone(driver)
    driver.refresh()
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'li.condition[data-id="{interface}"]'), 60)
    time.sleep(1.5)
    driver.save_screenshot(str(SHOTS / "phone-conditions.png"))
    check.equal("on a phone's screen (390 CSS pixels) nothing scrolls sideways", 0, overflow(driver))
    check.true("screenshots taken (desktop and phone)", all((SHOTS / n).stat().st_size > 10_000 for n in ("desktop-conditions.png", "phone-conditions.png")),
               sorted(p.name for p in SHOTS.iterdir()), "desktop-conditions.png, phone-conditions.png")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    card = driver.find_element(By.CSS_SELECTOR, f'li.condition[data-id="{interface}"]')
    card.find_element(By.CSS_SELECTOR, ".switch").click()
    wait_until(lambda: profile_in_force(daemon) == "off", 30)
    check.equal("the switch again: off, and the kernel's netem gone", ("off", []), (profile_in_force(daemon), netem_delays(device, device.interface)))
    daemon.cli("profile", "delete", MADE)


# ---------------------------------------------------------------- hostile requests

@pytest.mark.checks(8)
def test_hostile_requests(check, daemon, console):
    """Requests a page of another site, a script or a flood could send: each refused, nothing
    changed, the console still answering after."""
    host = "127.0.0.1"
    status, _, headers = http_request(host, "GET", "/api/session")
    csrf = headers.get("Set-Cookie", "").split("lc_csrf=", 1)[-1].split(";", 1)[0]
    cookie = {"Cookie": f"lc_csrf={csrf}"}
    path = "/api/conditions/" + quote(daemon.interface, safe="")

    status, answer, _ = http_request(host, "PUT", path, {"profile": "Slow Net"},
                                     {**cookie, "X-CSRF-Token": csrf, "Origin": "http://evil.example", "Host": f"{host}:{PORT}"})
    check.equal("a change from another site (its Origin): 403 cross-site", (403, "cross-site"), (status, answer.get("error", {}).get("code")))
    status, answer, _ = http_request(host, "PUT", path, {"profile": "Slow Net"}, cookie)
    check.equal("a change without the page's secret: 403 cross-site", (403, "cross-site"), (status, answer.get("error", {}).get("code")))
    status, answer, _ = http_request(host, "PUT", path, {"profile": "Slow Net"}, {**cookie, "X-CSRF-Token": csrf})
    check.equal("a change with the secret but no operator's sign-in: 403 forbidden", (403, "forbidden"), (status, answer.get("error", {}).get("code")))
    check.equal("nothing changed", "off", profile_in_force(daemon))

    tries = [http_request(host, "POST", "/api/sign-in", {"token": f"lct_{i:048x}"}) for i in range(6)]
    check.equal("six wrong tokens: five refused, the sixth told to wait (429 with Retry-After)",
                [403] * 5 + [(429, True)], [status for status, _, _ in tries[:5]] + [(tries[5][0], "Retry-After" in tries[5][2])])

    status, _, _ = http_request(host, "POST", "/api/profiles", b"x" * 100_000, {**cookie, "X-CSRF-Token": csrf})
    check.equal("a 100 KB body: 413", 413, status)

    slow = socket.create_connection((host, PORT), timeout=30)
    slow.sendall(b"GET /api/session HTTP/1.1\r\nHost: x\r\n")
    began = time.monotonic()
    try:
        closed = slow.recv(1) == b""
    except OSError:
        closed = True
    took = time.monotonic() - began
    slow.close()
    check.true("a request that never ends: the connection closed within 10 s (and a bit)", closed and took <= 12.5, f"closed {closed} after {took:.1f} s", "closed, <= 12.5 s")

    flood = []
    for _ in range(40):
        try:
            flood.append(socket.create_connection((host, PORT), timeout=5))
        except OSError:
            pass
    time.sleep(1)
    refused = 0
    for connection in flood:
        connection.setblocking(False)
        try:
            refused += connection.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            refused += 1
    for connection in flood:
        connection.close()
    time.sleep(0.5)
    status, _, _ = http_request(host, "GET", "/api/session")
    check.true("40 connections from one address: those beyond 32 closed at once, and the console answers after",
               refused >= 8 and status == 200, f"{refused} closed, then {status}", ">= 8 closed, then 200")


# ---------------------------------------------------------------- a gateway's devices

@pytest.fixture(scope="module")
def gateway(topo, server) -> Gateway:
    return build_gateway(topo, server)


@pytest.mark.checks(12)
def test_devices_behind_a_gateway(check, gateway, topo, work, profiles, linkcondd):
    """The daemon and the console on the router, as on a real gateway (the console's port exempt
    from shaping): device 1 opens the console in its browser and puts itself on a profile with
    the page's picker, which the kernel applies to it alone; from its page it cannot change
    device 2's condition; device 2 may set its own; a machine on the WAN side is told it is not
    behind the gateway and may change nothing; an operator's sign-in changes any device."""
    first, second = gateway.devices
    router_work = work / "router"
    router = Daemon(gateway.namespace, gateway.lan, router_work, profiles, args=("--exempt-port", str(PORT)))
    router.start()
    console = None
    try:
        console = Console(router, router_work, f"0.0.0.0:{PORT}", namespace=gateway.namespace, devices_on=gateway.lan)
        lan_address = first.v4.rsplit(".", 1)[0] + ".1"
        url = f"http://{lan_address}:{PORT}/"
        first_id, second_id = f"{gateway.lan}@device={first.v4}", f"{gateway.lan}@device={second.v4}"
        visit = subprocess.run(first.namespace.argv(sys.executable, "-m", "harness.browser", "device", "--url", url, "--profile", DEVICE_PROFILE,
                                                    "--other", quote(second_id, safe=""), "--shot", str(SHOTS / "phone-device.png"),
                                                    "--traffic", gateway.server4),
                               cwd=KERNEL_TESTS, capture_output=True, text=True, timeout=400)
        (SHOTS / "device-visit.log").write_text(visit.stdout + visit.stderr)
        try:
            seen = json.loads(visit.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            seen = {}
        check.true("device 1's page: This device, its address, no problem", seen.get("device_shown") and first.v4 in seen.get("who", "") and not seen.get("problem"),
                   seen or visit.stderr[-600:], f"shown, {first.v4}, no problem")
        check.equal("device 1 put itself on the profile with its page's picker (the daemon's status)", DEVICE_PROFILE,
                    profile_in_force(router, "--interface", gateway.lan, "--device", first.v4))
        rtt = {d.v4: d.probes.rtt([udp_target(gateway.server4)], rounds=5)[udp_target(gateway.server4)].min_ms for d in (first, second)}
        check.true("the kernel delays device 1 alone (its round trip 50 ms more; device 2's unshaped)",
                   rtt[first.v4] is not None and rtt[second.v4] is not None and 50 <= rtt[first.v4] <= 56 and rtt[second.v4] < 5,
                   rtt, "device 1 50 to 56 ms, device 2 under 5 ms")
        other = seen.get("other", {})
        check.true("from its page, device 1 may not change device 2's condition: 403, device 2 still off",
                   other.get("status") == 403 and profile_in_force(router, "--interface", gateway.lan, "--device", second.v4) == "off",
                   other, "403, off")

        curl = ["curl", "-s", "-c", str(router_work / "jar2"), "-b", str(router_work / "jar2")]
        session = json.loads(second.namespace.run(*curl, url + "api/session").out or "{}")
        own = second.namespace.run(*curl, "-X", "PUT", "-H", "Content-Type: application/json", "-H", f"X-CSRF-Token: {session.get('csrf', '')}",
                                   "-d", json.dumps({"profile": DEVICE_PROFILE}), "-w", "\n%{http_code}", url + "api/conditions/" + quote(second_id, safe=""))
        check.equal("device 2 sets its own condition (200, in force)", ("200", DEVICE_PROFILE),
                    (own.out.strip().splitlines()[-1] if own.out.strip() else own.describe(), profile_in_force(router, "--interface", gateway.lan, "--device", second.v4)))

        wan = f"http://{gateway.server4.rsplit('.', 1)[0]}.1:{PORT}/"
        server_ns = topo.server
        outside = json.loads(server_ns.run("curl", "-s", wan + "api/session").out or "{}")
        problem = (outside.get("device") or {}).get("problem") or ""
        check.true("a machine on the WAN side is told it is not behind the gateway", "not behind this gateway" in problem, problem or outside, "not behind this gateway")
        jar = ["-c", str(router_work / "jar3"), "-b", str(router_work / "jar3")]
        csrf = json.loads(server_ns.run("curl", "-s", *jar, wan + "api/session").out or "{}").get("csrf", "")
        refused = server_ns.run("curl", "-s", *jar, "-X", "PUT", "-H", "Content-Type: application/json", "-H", f"X-CSRF-Token: {csrf}",
                                "-d", json.dumps({"profile": "Slow Net"}), "-w", "\n%{http_code}", wan + "api/conditions/" + quote(first_id, safe=""))
        check.equal("... and may change nothing (403), device 1 unchanged", ("403", DEVICE_PROFILE),
                    (refused.out.strip().splitlines()[-1], profile_in_force(router, "--interface", gateway.lan, "--device", first.v4)))

        signed = server_ns.run("curl", "-s", *jar, "-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps({"token": console.token()}),
                               "-w", "\n%{http_code}", wan + "api/sign-in")
        session = json.loads(signed.out.strip().splitlines()[0] or "{}") if signed.out.strip() else {}
        changed = server_ns.run("curl", "-s", *jar, "-X", "DELETE", "-H", f"X-CSRF-Token: {session.get('csrf', '')}", "-w", "\n%{http_code}",
                                wan + "api/conditions/" + quote(first_id, safe=""))
        check.equal("an operator, signed in, switches device 1 off", ("200", "off"),
                    (changed.out.strip().splitlines()[-1], profile_in_force(router, "--interface", gateway.lan, "--device", first.v4)))
        check.equal("the device's page on its phone-size screen: nothing scrolls sideways", 0, seen.get("overflow"))
        check.true("its condition on and the device idle, the page says none of its traffic passes the gateway (15 s on)",
                   seen.get("quiet_said") and 15 <= seen.get("quiet_after", 0) <= 25 and "bypasses the gateway" in seen.get("quiet_text", ""),
                   (seen.get("quiet_said"), seen.get("quiet_after"), seen.get("quiet_text", "")[:80]), "said after 15 to 25 s")
        check.true("... and takes it back once the device's traffic flows", seen.get("traffic_cleared"), seen.get("traffic_cleared"), "cleared")
        check.true("the device's phone-size screenshot", (SHOTS / "phone-device.png").exists() and (SHOTS / "phone-device.png").stat().st_size > 5_000,
                   (SHOTS / "phone-device.png").exists(), "taken")
    finally:
        if console:
            console.stop()
        router.stop()
