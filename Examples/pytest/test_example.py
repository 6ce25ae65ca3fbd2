"""Tests that see the network linkcond makes: run with `python3 -m pytest Examples/pytest`.

EXAMPLE_URL names the page they fetch (http://example.com/ by default).
"""

import os
import time
import urllib.request

import pytest

URL = os.environ.get("EXAMPLE_URL", "http://example.com/")


def fetch_seconds(timeout=30):
    started = time.monotonic()
    with urllib.request.urlopen(URL, timeout=timeout) as response:
        response.read()
    return time.monotonic() - started


@pytest.mark.network_condition("Slow Net")
def test_a_page_takes_slow_nets_round_trips():
    # Slow Net adds 100 ms each way: the TCP handshake and the request are two round trips.
    assert fetch_seconds() >= 0.4


def test_slow_net_over_part_of_a_test(network_condition):
    unshaped = fetch_seconds()
    with network_condition("Slow Net") as status:
        assert status["profile"]["name"] == "Slow Net"
        shaped = fetch_seconds()
    assert shaped - unshaped >= 0.35
    assert fetch_seconds() < shaped


def test_black_hole_times_out(network_condition):
    with network_condition("Black Hole"):
        with pytest.raises(OSError):
            fetch_seconds(timeout=2)
