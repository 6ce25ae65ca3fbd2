"""linkcondd's control API, read in-process: HTTP/1.1 over its Unix socket, JSON parsed here.

The harness's own reads of the daemon go through this (no curl, no jq per check). A daemon that
does not answer raises `NoAnswer`, never an empty document: a check built on a read that did not
happen must not pass.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .system import HarnessError


class NoAnswer(HarnessError):
    """The daemon did not answer: no socket, refused, closed, or out of time."""


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The body as JSON; HarnessError when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise HarnessError(f"a {self.status} answer that is not JSON ({error}): {self.body[:200]!r}") from None

    @property
    def error_code(self) -> str | None:
        """`error.code` of an error document, else None."""
        try:
            return json.loads(self.body)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return None


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float):
        super().__init__("linkcond", timeout=timeout)
        self.socket_path = str(path)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.socket_path)
        self.sock = s


def condition_path(condition_id: str | None) -> str:
    """The API path of a condition: the default one (None), or one by its id (`veth-c3@10.0.0.5:53`)."""
    if condition_id is None:
        return "/v1/condition"
    return "/v1/conditions/" + urllib.parse.quote(condition_id, safe="")


class ControlAPI:
    """Requests to one daemon's socket, each on a connection of its own."""

    def __init__(self, socket_path: Path, timeout: float = 30):
        self.socket_path = Path(socket_path)
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, *, timeout: float | None = None,
                raw_body: bytes | None = None) -> Reply:
        data = raw_body if raw_body is not None else (json.dumps(body).encode() if body is not None else None)
        connection = _UnixConnection(self.socket_path, timeout or self.timeout)
        try:
            headers = {"Content-Type": "application/json"} if data is not None else {}
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        except (OSError, http.client.HTTPException) as error:
            raise NoAnswer(f"{method} {path} on {self.socket_path}: {type(error).__name__}: {error}") from None
        finally:
            connection.close()

    def get(self, path: str, **kwargs) -> Reply:
        return self.request("GET", path, **kwargs)

    def get_json(self, path: str, **kwargs) -> Any:
        """GET PATH, which must answer 200 with JSON."""
        reply = self.get(path, **kwargs)
        if reply.status != 200:
            raise HarnessError(f"GET {path}: {reply.status} {reply.body[:300]!r}")
        return reply.json

    # ---------------------------------------------------------------- the documents

    def status(self, condition_id: str | None = None) -> dict:
        """GET /v1/status, or GET /v1/conditions/ID."""
        path = "/v1/status" if condition_id is None else condition_path(condition_id)
        return self.get_json(path)

    def conditions(self) -> list[dict]:
        return self.get_json("/v1/conditions")["conditions"]

    def profile_in_force(self, condition_id: str | None = None) -> str:
        """The name of the profile in force, or "off"."""
        document = self.status(condition_id)
        return document["profile"]["name"] if document.get("active") else "off"

    def stats(self) -> dict:
        return self.get_json("/v1/stats")

    def history(self, limit: int = 200) -> list[dict]:
        return self.get_json(f"/v1/history?limit={limit}")["entries"]

    # ---------------------------------------------------------------- changes

    def put_condition(self, body: dict, condition_id: str | None = None, **kwargs) -> Reply:
        return self.request("PUT", condition_path(condition_id), body, **kwargs)

    def activate(self, profile: str, condition_id: str | None = None, **fields) -> Reply:
        """PUT a profile by name (with FIELDS such as `for_`... given as the API spells them)."""
        return self.put_condition({"profile": profile, **fields}, condition_id)

    def off(self, condition_id: str | None = None, **kwargs) -> Reply:
        return self.request("DELETE", condition_path(condition_id), **kwargs)

    def must(self, reply: Reply, *statuses: int) -> Reply:
        """REPLY, which must have one of STATUSES (200 unless told): HarnessError otherwise."""
        if reply.status not in (statuses or (200,)):
            raise HarnessError(f"the daemon answered {reply.status}: {reply.body[:300]!r}")
        return reply

    # ---------------------------------------------------------------- fault injection

    def arm_fault(self, step: int, fault: str) -> None:
        """With --enable-fault-injection: FAULT (`kill`, or a netlink error) before the netlink
        step STEP from now (0: the next)."""
        self.must(self.request("PUT", "/v1/debug/fault", {"failAtStep": step, "fault": fault}))

    def disarm_fault(self) -> None:
        self.must(self.request("PUT", "/v1/debug/fault", {}))

    def executed_steps(self) -> int:
        return self.get_json("/v1/debug/fault")["executedSteps"]
