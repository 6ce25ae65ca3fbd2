#!/usr/bin/env python3
"""A connection flood on a TCP listener, as a local user without rights would make one: as many
connections at once as its file limit lets it hold, each replaced as soon as the server closes
or refuses it, for a while. Standard library only (it runs as nobody, with the system's Python).

  tcpflood.py --connect HOST:PORT [--connections N] [--seconds S] [--until FILE] [--out FILE]

Prints one JSON summary: connection attempts, how many the server accepted, refused at connect,
answered (by status) and closed, reset, the most open at once from this side, and those still
open and silent at the end.
"""

import argparse
import errno
import json
import os
import resource
import selectors
import socket
import time


def raise_file_limit(wanted):
    """The soft limit on open files raised as far as the hard one allows, to WANTED."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Flood:
    def __init__(self, address, connections):
        self.address = address
        self.family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.connections = connections
        self.selector = selectors.DefaultSelector()
        self.open = {}  # socket -> {"connected": bool, "data": bytes}
        self.counts = {"attempts": 0, "connected": 0, "refused_at_connect": 0, "answered": 0, "closed_by_server": 0,
                       "reset": 0, "open_limit_hits": 0, "other_errors": 0}
        self.by_status = {}
        self.errors = {}
        self.peak_open = 0
        self.peak_connected = 0

    def error(self, code):
        name = errno.errorcode.get(code, str(code))
        self.errors[name] = self.errors.get(name, 0) + 1

    def open_one(self):
        """One more connection on its way; False when this process can hold no more for now."""
        try:
            s = socket.socket(self.family, socket.SOCK_STREAM)
        except OSError as e:
            self.counts["open_limit_hits"] += 1
            self.error(e.errno)
            return False
        s.setblocking(False)
        self.counts["attempts"] += 1
        code = s.connect_ex(self.address)
        if code not in (0, errno.EINPROGRESS):
            s.close()
            if code == errno.ECONNREFUSED:
                self.counts["refused_at_connect"] += 1
            else:
                self.counts["other_errors"] += 1
                self.error(code)
            # Out of local ports or similar: wait for some to close.
            return code == errno.ECONNREFUSED
        self.open[s] = {"connected": False, "data": b""}
        self.selector.register(s, selectors.EVENT_WRITE)
        return True

    def close(self, s):
        self.selector.unregister(s)
        del self.open[s]
        s.close()

    def finish(self, s, state):
        """A connection the server ended: what it said, then closed."""
        head = state["data"].split(b"\r\n", 1)[0].split(b" ")
        if len(head) >= 2 and head[0].startswith(b"HTTP/") and head[1].isdigit():
            self.counts["answered"] += 1
            self.by_status[head[1].decode()] = self.by_status.get(head[1].decode(), 0) + 1
        self.close(s)

    def step(self, timeout):
        for key, events in self.selector.select(timeout):
            s = key.fileobj
            state = self.open.get(s)
            if state is None:
                continue
            if not state["connected"]:
                code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    state["connected"] = True
                    self.counts["connected"] += 1
                    self.selector.modify(s, selectors.EVENT_READ)
                else:
                    self.counts["refused_at_connect" if code == errno.ECONNREFUSED else "other_errors"] += 1
                    if code != errno.ECONNREFUSED:
                        self.error(code)
                    self.close(s)
                continue
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                self.counts["reset"] += 1
                self.finish(s, state)
                continue
            except BlockingIOError:
                continue
            if chunk:
                state["data"] += chunk
            else:
                self.counts["closed_by_server"] += 1
                self.finish(s, state)
        connected = sum(1 for st in self.open.values() if st["connected"])
        self.peak_open = max(self.peak_open, len(self.open))
        self.peak_connected = max(self.peak_connected, connected)

    def run(self, seconds, until):
        started = time.monotonic()
        deadline = started + seconds
        while time.monotonic() < deadline and not (until and os.path.exists(until)):
            room = True
            while room and len(self.open) < self.connections:
                room = self.open_one()
            self.step(0.02 if room else 0.1)
        silent = sum(1 for st in self.open.values() if st["connected"] and not st["data"])
        pending = sum(1 for st in self.open.values() if not st["connected"])
        summary = {**self.counts, "by_status": self.by_status, "errors": self.errors, "peak_open": self.peak_open,
                   "peak_connected": self.peak_connected, "open_at_end": len(self.open),
                   "silent_at_end": silent, "pending_at_end": pending,
                   "seconds": round(time.monotonic() - started, 1)}
        for s in list(self.open):
            self.close(s)
        return summary


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--connect", required=True, metavar="HOST:PORT")
    p.add_argument("--connections", type=int, default=4000, help="connections to try to hold at once")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--until", help="stop earlier, as soon as this file exists")
    p.add_argument("--out")
    a = p.parse_args()
    host, _, port = a.connect.rpartition(":")
    limit = raise_file_limit(a.connections + 64)
    flood = Flood((host.strip("[]"), int(port)), min(a.connections, limit - 32))
    summary = {"file_limit": limit, **flood.run(a.seconds, a.until)}
    text = json.dumps(summary)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
