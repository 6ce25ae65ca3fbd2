"""A real browser for the console's tests: Debian's headless Chromium, driven through Debian's
chromedriver by selenium (PyPI). `chrome()` opens one in this process's network namespace; run
as a script (`python3 -m harness.browser device ...` inside a device's namespace), it plays a
device's visit to the console there and prints what it saw as JSON, since a browser's driver
must share the browser's namespace."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

CHROMEDRIVER = "/usr/bin/chromedriver"
#: Desktop and phone (an iPhone 12's CSS pixels) window sizes for screenshots.
DESKTOP, PHONE = (1280, 900), (390, 844)


def chrome(size: tuple[int, int] = DESKTOP, only_host: str | None = None) -> webdriver.Chrome:
    """Headless Chromium as root in a VM: no sandbox (root), no GPU, its profile in a fresh
    directory, /dev/shm not relied on (small under User-mode Linux). With ONLY_HOST, every other
    name fails at once, unasked: Chromium's own services (accounts, updates, autofill) look up
    names every few seconds, traffic a device's page would count as the device's."""
    options = Options()
    profile = tempfile.mkdtemp(prefix="lc-chrome-")
    if only_host:
        options.add_argument(f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {only_host}")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(60)
    if size == PHONE:
        as_phone(driver)
    # Chromium's profile goes with it.
    quit_browser = driver.quit
    driver.quit = lambda: (quit_browser(), shutil.rmtree(profile, ignore_errors=True))
    return driver


def as_phone(driver) -> None:
    """The page as a phone shows it: a 390 CSS pixel wide viewport (a window is never narrower
    than 500 pixels, even headless), touch-sized and mobile, through the DevTools protocol."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True})


def overflow(driver) -> int:
    """How many CSS pixels the page is wider than its viewport: 0 when nothing scrolls sideways."""
    return driver.execute_script("return Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth)")


def wait_for(condition, timeout: float = 30, interval: float = 0.25):
    """CONDITION's first truthy value within TIMEOUT seconds, or None."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except WebDriverException:
            value = None
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def fetch(driver, method: str, path: str, body=None) -> dict:
    """A request from the page itself (same origin, its cookies), with the page's CSRF secret:
    what a script on the device could send. Its status and JSON."""
    return driver.execute_async_script("""
        const [method, path, body, done] = arguments;
        const session = await (await fetch('/api/session')).json();
        const answer = await fetch(path, {method, credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf},
            body: body === null ? undefined : JSON.stringify(body)});
        let data = null; try { data = await answer.json(); } catch (e) {}
        done({status: answer.status, data});
    """, method, path, body)


def send_datagrams(host: str, seconds: float) -> None:
    """Ten datagrams a second to HOST's echo port (the probe server's) for SECONDS."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sender:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sender.sendto(b"linkcond console test", (host, 7))
            time.sleep(0.1)


def device_visit(args) -> dict:
    """A device opens the console, reads what it says of itself, and (with --profile) puts
    itself on that profile with the page's own picker; then it tries to change --other's
    condition from its page. What each step saw."""
    seen: dict = {}
    driver = chrome(PHONE, only_host=urlsplit(args.url).hostname)
    try:
        driver.get(args.url)
        seen["device_shown"] = bool(wait_for(lambda: driver.find_element(By.ID, "device").is_displayed() and text(driver, "who") != "Loading…"))
        seen["who"] = text(driver, "who")
        seen["problem"] = text(driver, "device-problem") if driver.find_element(By.ID, "device-problem").is_displayed() else ""
        if args.profile and not seen["problem"]:
            wait_for(lambda: len(Select(driver.find_element(By.ID, "device-profile")).options) > 1)
            Select(driver.find_element(By.ID, "device-profile")).select_by_visible_text(args.profile)
            driver.find_element(By.CSS_SELECTOR, "#device-form button[type=submit]").click()
            applied = time.monotonic()
            seen["state"] = wait_for(lambda: args.profile in text(driver, "device-state") and text(driver, "device-state"), 60) or text(driver, "device-state")
        if args.shot:
            time.sleep(1.5)
            driver.save_screenshot(args.shot)
        seen["overflow"] = overflow(driver)
        if args.traffic and args.profile:
            # Idle, the page says none of the device's traffic passes the gateway; with traffic, it stops.
            shown = lambda: driver.find_element(By.ID, "device-bypass").is_displayed()
            seen["quiet_said"] = bool(wait_for(shown, 40))
            seen["quiet_after"] = round(time.monotonic() - applied, 1)
            seen["quiet_text"] = text(driver, "device-bypass")
            sender = threading.Thread(target=send_datagrams, args=(args.traffic, 10.0), daemon=True)
            sender.start()
            seen["traffic_cleared"] = bool(wait_for(lambda: not shown(), 20))
            sender.join()
        if args.other:
            seen["other"] = fetch(driver, "PUT", "/api/conditions/" + args.other, {"profile": args.profile or "Slow Net"})
        seen["notice"] = text(driver, "notice")
    finally:
        driver.quit()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    device = modes.add_parser("device")
    device.add_argument("--url", required=True)
    device.add_argument("--profile")
    device.add_argument("--other", help="another device's condition id (percent-encoded) to try to change")
    device.add_argument("--shot", help="a screenshot's path (phone size)")
    device.add_argument("--traffic", help="after applying: wait for the page to say no traffic passes, then send some to this host's echo port")
    args = parser.parse_args()
    print(json.dumps(device_visit(args)))


if __name__ == "__main__":
    sys.exit(main())
