"""TCP connections held open by a real client and server, and what each end saw of them: run as
a script inside a namespace (`python3 connections.py serve|hold ...`), it writes one JSON line
per event to its report, stamped with CLOCK_MONOTONIC (the same clock in every namespace of the
VM), so that a test can tell how soon after a reset each end failed.

  serve  listens on ADDRESS:PORT; each connection it accepts echoes what it reads and reports
         how it ended (`eof`, or the errno's name: `ECONNRESET`, `ECONNABORTED`).
  hold   opens COUNT connections to HOST:PORT, writes the ready file once all are open, each
         blocked in recv; reports how each ended. When the probe file appears, each one still
         open sends a byte and reports `alive` once it is echoed (or the error it got).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys
import threading
import time

_lock = threading.Lock()


def report(path: str, **event) -> None:
    event["at"] = time.monotonic()
    with _lock, open(path, "a") as out:
        out.write(json.dumps(event) + "\n")


def outcome(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, str(error.errno))


def serve(args) -> None:
    family = socket.AF_INET6 if ":" in args.address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.address, args.port))
    listener.listen(64)
    open(args.ready, "w").close()

    def echo(connection: socket.socket, peer) -> None:
        port = peer[1]
        try:
            while True:
                data = connection.recv(4096)
                if not data:
                    report(args.report, side="server", peer_port=port, event="eof")
                    return
                connection.sendall(data)
        except OSError as error:
            report(args.report, side="server", peer_port=port, event=outcome(error))

    while True:
        connection, peer = listener.accept()
        threading.Thread(target=echo, args=(connection, peer), daemon=True).start()


def hold(args) -> None:
    connections = [socket.create_connection((args.host, args.port), timeout=10) for _ in range(args.count)]
    for connection in connections:
        connection.settimeout(None)
    ports = [c.getsockname()[1] for c in connections]
    done = threading.Event()

    def watch(connection: socket.socket, port: int) -> None:
        try:
            data = connection.recv(1)
            report(args.report, side="client", port=port, event="alive" if data else "eof")
        except OSError as error:
            report(args.report, side="client", port=port, event=outcome(error))

    threads = [threading.Thread(target=watch, args=(c, p), daemon=True) for c, p in zip(connections, ports)]
    for thread in threads:
        thread.start()
    with open(args.ready, "w") as out:
        json.dump(ports, out)
    while not os.path.exists(args.probe):
        if not any(t.is_alive() for t in threads):
            return
        time.sleep(0.05)
    for connection, port in zip(connections, ports):
        try:
            connection.sendall(b"x")
        except OSError as error:
            report(args.report, side="client", port=port, event="send " + outcome(error))
    for thread in threads:
        thread.join(5)
    done.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    s = modes.add_parser("serve")
    s.add_argument("--address", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--report", required=True)
    s.add_argument("--ready", required=True)
    h = modes.add_parser("hold")
    h.add_argument("--host", required=True)
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--count", type=int, default=1)
    h.add_argument("--report", required=True)
    h.add_argument("--ready", required=True)
    h.add_argument("--probe", required=True)
    args = parser.parse_args()
    (serve if args.mode == "serve" else hold)(args)


if __name__ == "__main__":
    sys.exit(main())
