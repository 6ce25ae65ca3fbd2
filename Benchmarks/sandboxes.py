#!/usr/bin/env python3
"""Holds sandboxes of `linkcond run --isolated` for the scale benchmark (Benchmarks/run.sh).
Standard library only.

  sandboxes.py --socket PATH --count N --profile NAME [--user-namespace]

Makes N fresh network namespaces (a sleeping process in each, made by `unshare`; with
--user-namespace inside a user namespace of the caller's, as an unprivileged `run --isolated`
makes them), then asks linkcondd for a sandbox lease on each in turn, as `run --isolated` asks,
timing each from its request to the daemon's "active" line. Prints one JSON line with the times,
then holds every lease until SIGTERM, when it closes them all at once and ends the processes.
Exits 1 if a lease was refused.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time


def fresh_namespace(user_namespace):
    """A process in a network namespace of its own: unshare execs sleep in place, so the
    process is the one asked for, once its namespace is no longer ours."""
    own = os.readlink("/proc/self/ns/net")
    process = subprocess.Popen(["unshare", "-rn" if user_namespace else "-n", "sleep", "infinity"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if os.readlink("/proc/%d/ns/net" % process.pid) != own:
                return process
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit("sandboxes.py: process %d did not leave this network namespace" % process.pid)


def lease(path, pid, profile, timeout=120):
    """Opens a sandbox lease on PID's namespace; returns the connection, which holds it."""
    body = json.dumps({"profile": profile, "condition": "pid/%d/eth0" % pid, "sandbox": True}).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    connection.connect(path)
    connection.sendall(b"POST /v1/leases HTTP/1.1\r\nHost: linkcond\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body) + body)
    received = b""
    while b'"active"' not in received:
        chunk = connection.recv(65536)
        if not chunk:
            raise SystemExit("sandboxes.py: lease on pid %d refused: %s" % (pid, received.decode(errors="replace")[-400:]))
        received += chunk
    return connection


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--profile", default="Slow Net")
    parser.add_argument("--user-namespace", action="store_true")
    args = parser.parse_args()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    processes = [fresh_namespace(args.user_namespace) for _ in range(args.count)]
    connections, milliseconds = [], []
    try:
        for process in processes:
            start = time.monotonic()
            connections.append(lease(args.socket, process.pid, args.profile))
            milliseconds.append((time.monotonic() - start) * 1000)
        ordered = sorted(milliseconds)
        print(json.dumps({"uid": os.getuid(), "count": len(milliseconds), "createMilliseconds": [round(m, 1) for m in milliseconds],
                          "meanMilliseconds": sum(ordered) / len(ordered), "maxMilliseconds": ordered[-1]}), flush=True)
        signal.sigwait({signal.SIGTERM})
    finally:
        for connection in connections:
            connection.close()
        for process in processes:
            process.kill()
            process.wait()


if __name__ == "__main__":
    sys.exit(main())
