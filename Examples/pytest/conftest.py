"""A pytest fixture and marker that run a test under a linkcond profile.

    @pytest.mark.network_condition("Slow Net")
    def test_checkout_shows_a_spinner(): ...

    def test_retry(network_condition):
        with network_condition("Black Hole"):
            ...

The condition is a client-bound lease (POST /v1/leases): it holds while this process keeps its
connection to the daemon, and the daemon restores what was in force before when the block ends,
when the test fails, and when the test process is killed. Standard library only; set
LINKCOND_SOCKET for a daemon on another socket. Needs root or the linkcond group, as `linkcond
activate` does.
"""

import contextlib
import http.client
import json
import os
import socket

import pytest

SOCKET = os.environ.get("LINKCOND_SOCKET", "/run/linkcond/control.sock")


class LinkcondError(Exception):
    """The daemon refused the condition: `code` is the API's stable error code."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("linkcond", timeout=timeout)
        self.path = path
        self.unix_socket = None

    def connect(self):
        self.sock = self.unix_socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


@contextlib.contextmanager
def network_condition(profile, *, interface=None, longest=None, timeout=60):
    """Holds PROFILE (a name, as `linkcond list` shows) on the default interface, or on
    INTERFACE, for the body; LONGEST (`10m`) bounds it even if this process hangs. Yields the
    condition's status as the API gives it."""
    request = {"profile": profile}
    if interface:
        request["interface"] = interface
    if longest:
        request["for"] = longest
    connection = _UnixHTTPConnection(SOCKET, timeout)
    try:
        connection.request("POST", "/v1/leases", json.dumps(request), {"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            error = json.loads(response.read())["error"]
            raise LinkcondError(error["code"], error["message"])
        active = json.loads(response.readline())
        # The lease may outlast the connection's read timeout: it is held, not read.
        connection.unix_socket.settimeout(None)
        yield active["status"]
        # Half-closing ends the lease; the last line says it ended and what is back.
        connection.unix_socket.shutdown(socket.SHUT_WR)
        connection.unix_socket.settimeout(timeout)
        response.readline()
    finally:
        connection.close()
        if connection.unix_socket is not None:
            connection.unix_socket.close()


def pytest_configure(config):
    config.addinivalue_line("markers", "network_condition(profile, interface=None): run the test under a linkcond profile")


@pytest.fixture(name="network_condition")
def network_condition_fixture():
    """The context manager, for a condition over part of a test."""
    return network_condition


@pytest.fixture(autouse=True)
def _network_condition_marker(request):
    marker = request.node.get_closest_marker("network_condition")
    if marker is None:
        yield None
        return
    with network_condition(*marker.args, **marker.kwargs) as status:
        yield status
