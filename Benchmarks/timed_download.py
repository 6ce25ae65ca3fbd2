#!/usr/bin/env python3
"""A TCP download from the source of `probe.py serve` (Tests/Kernel/harness/probe.py, port 5002), its
delivered bytes recorded on CLOCK_MONOTONIC, for the scenario part of Benchmarks/run.sh.
Standard library only.

  timed_download.py --host HOST --duration SECONDS [--rcvbuf BYTES] [--every SECONDS]

Prints one JSON document: probe.py throughput's fields for a download (`total_bytes`,
`frame_bytes`, `payload_bytes`, `series` as [seconds from the start, payload bytes so far]),
`startMonotonicNs`, the moment the series counts from (connected), on the clock the stream's
packets are stamped with, and `error` when the connection failed.

Why not `probe.py throughput --series`: it merges arrivals less than 10 ms apart into one point
that slides along with them, so a steady transfer (a frame every 1.5 ms at 8 Mbit/s) leaves one
point for seconds. Here a point is taken at the first arrival at least `--every` after the last
point, with the bytes received up to then.
"""

import argparse
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Kernel"))
from probe import SOURCE_PORT, family_of  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", required=True)
    p.add_argument("--duration", type=float, required=True, help="seconds from connecting")
    p.add_argument("--rcvbuf", type=int, default=0, help="receive buffer, 0 = kernel autotuning")
    p.add_argument("--every", type=float, default=0.002, help="seconds between points of the series, at least")
    p.add_argument("--frame", type=int, default=1514, help="link bytes per full segment")
    p.add_argument("--payload", type=int, default=1448, help="TCP payload per full segment")
    a = p.parse_args()
    s = socket.socket(family_of(a.host), socket.SOCK_STREAM)
    if a.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    s.settimeout(30)
    error = None
    total = 0
    start = None
    series = []
    last = None
    try:
        s.connect((a.host, SOURCE_PORT))
        start = time.monotonic_ns()
        series.append((start, 0))
        every = int(a.every * 1e9)
        end = start + int(a.duration * 1e9)
        s.settimeout(0.2)
        while True:
            try:
                n = len(s.recv(65536))
            except socket.timeout:
                n = None
            t = time.monotonic_ns()
            if t >= end:
                break
            if n is None:
                continue
            if n == 0:
                error = "the source closed the connection"
                break
            total += n
            last = (t, total)
            if t - series[-1][0] >= every:
                series.append(last)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError as e:
        error = str(e)
    s.close()
    if last and series[-1] != last:
        series.append(last)
    json.dump({
        "dir": "down", "host": a.host, "total_bytes": total, "frame_bytes": a.frame, "payload_bytes": a.payload,
        "startMonotonicNs": start, "error": error,
        "series": [(round((t - start) / 1e9, 4), b) for t, b in series],
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
