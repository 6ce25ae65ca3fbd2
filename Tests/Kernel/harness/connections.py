"""TCP connections held open by a real client and server, and what each end saw of them: run as
a script inside a namespace (`python3 connections.py serve|hold ...`), it writes one JSON line
per event to its report, stamped with CLOCK_MONOTONIC (the same clock in every namespace of the
VM), so that a test can tell how soon after a reset each end failed.

  serve  listens on ADDRESS:PORT; each connection it accepts echoes what it reads and reports
         how it ended (`eof`, or the errno's name: `ECONNRESET`, `ECONNABORTED`); with --udp,
         echoes datagrams on the same port too.
  hold   opens COUNT connections to HOST:PORT, writes the ready file once all are open, each
         blocked in recv; reports how each ended. When the probe file appears, each one still
         open sends a byte and reports `alive` once it is echoed (or the error it got).
  tries  opens COUNT new connections to HOST:PORT one after another (TCP), or sends a datagram
         on COUNT connected UDP sockets and waits for the answer; prints, as JSON, what each got
         (`ok`, `timeout`, or the errno's name; for a datagram whose send failed, `send ERRNO,
         then` what the socket heard in the 0.2 s after it) and how long until the app knew, in
         milliseconds.
  lookup resolves NAME COUNT times with getaddrinfo; prints what each got (`ok`, `timeout`, or
         the EAI_ error's name) and how long it took.
  link-watch  every 50 ms, connects to HOST:PORT and asks whether IFACE is running (its
         carrier); prints each sample's time, result and that flag.
  handover-watch  every 100 ms, sends a datagram to a `serve --udp-tell` and keeps a TCP
         connection to it echoing; prints the source the server saw and the connection's state.
  Both watch until AFTER seconds past the moment the MOVED file appears (the test's sign that it
  changed the condition), at most SECONDS in all: how long a start takes under emulation does
  not decide how much of the change they see.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import struct
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
    if args.udp:
        datagrams = socket.socket(family, socket.SOCK_DGRAM)
        datagrams.bind((args.address, args.port))

        def echo_datagrams() -> None:
            while True:
                data, sender = datagrams.recvfrom(2048)
                # With --udp-tell, the answer says where the datagram came from instead.
                datagrams.sendto(f"{sender[0]}:{sender[1]}".encode() if args.udp_tell else data, sender)

        threading.Thread(target=echo_datagrams, daemon=True).start()
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


def attempt(args) -> dict:
    """One try: what it got, and how long until the app knew (for a datagram whose send failed,
    that failure; what the socket heard after it is waited for 0.2 s more, and not timed)."""
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    kind = socket.SOCK_STREAM if args.proto == "tcp" else socket.SOCK_DGRAM
    began = time.monotonic()

    def done(result: str) -> dict:
        return {"result": result, "ms": (time.monotonic() - began) * 1000}

    with socket.socket(family, kind) as sock:
        if args.blocking:
            # A blocking connect, as most apps' threads make: Python's own timeout would make the
            # socket non-blocking, so the kernel's send timeout bounds it instead (after which
            # connect says EINPROGRESS).
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(args.timeout), 0))
        else:
            sock.settimeout(args.timeout)
        if args.recverr:
            # Every ICMP error, not only those the kernel deems fatal (IPv6's "no route").
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, 25, 1)  # IPV6_RECVERR
            else:
                sock.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR
        try:
            sock.connect((args.host, args.port))
        except socket.timeout:
            return done("timeout")
        except OSError as error:
            return done(outcome(error))
        if args.proto == "tcp":
            return done("ok")
        try:
            sock.send(b"x")
        except OSError as error:
            known = done(f"send {outcome(error)}")
            sock.settimeout(0.2)
            try:
                sock.recv(64)
                known["result"] += ", then ok"
            except socket.timeout:
                known["result"] += ", then timeout"
            except OSError as later:
                known["result"] += f", then {outcome(later)}"
            return known
        try:
            sock.recv(64)
            return done("ok")
        except socket.timeout:
            return done("timeout")
        except OSError as error:
            return done(outcome(error))


def timed(what) -> dict:
    began = time.monotonic()
    result = what()
    return {"result": result, "ms": (time.monotonic() - began) * 1000}


def tries(args) -> None:
    print(json.dumps([attempt(args) for _ in range(args.count)]))


def lookup(args) -> None:
    names = {getattr(socket, n): n for n in dir(socket) if n.startswith("EAI_")}

    def resolve() -> str:
        try:
            socket.getaddrinfo(args.name, 80, proto=socket.IPPROTO_TCP)
            return "ok"
        except socket.gaierror as error:
            return names.get(error.errno, str(error.errno))

    print(json.dumps([timed(resolve) for _ in range(args.count)]))


def mark_ready(args, began: float) -> None:
    """Creates READY once the watch has sampled for READY_AFTER seconds: what a test waits for
    before it changes the condition, whatever the command's start took."""
    if args.ready and time.monotonic() - began >= args.ready_after and not os.path.exists(args.ready):
        open(args.ready, "w").close()


def watching(args, began: float) -> bool:
    """Whether a watch goes on: it ends AFTER seconds past MOVED's appearance, or at SECONDS."""
    now = time.monotonic()
    if args.moved_seen is None and os.path.exists(args.moved):
        args.moved_seen = now
    if args.moved_seen is not None:
        return now - args.moved_seen < args.after
    return now - began < args.seconds


def watched(samples: list[dict], began: float) -> None:
    """Prints the samples, their times from BEGAN, and BEGAN itself on CLOCK_MONOTONIC."""
    print(json.dumps({"began": began, "samples": samples}))


def link_watch(args) -> None:
    """Every 50 ms: a TCP connect to HOST:PORT (its result) and whether the
    interface IFACE is running (has its carrier: IFF_RUNNING, asked of this namespace's kernel)."""
    import fcntl
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def running() -> bool:
        flags = struct.unpack("16sH", fcntl.ioctl(probe, 0x8913, struct.pack("16sH", args.iface.encode(), 0)))[1]
        return bool(flags & 0x40)

    samples = []
    began = time.monotonic()
    while watching(args, began):
        at = time.monotonic() - began
        args.proto, args.recverr, args.blocking = "tcp", False, False
        samples.append({"at": round(at, 3), "result": attempt(args)["result"], "running": running()})
        mark_ready(args, began)
        time.sleep(0.05)
    watched(samples, began)


def handover_watch(args) -> None:
    """Every 100 ms, on one connected UDP socket and one TCP connection to
    HOST:PORT (a `serve --udp --udp-tell`): the source the server saw the datagram come from (or
    `timeout`), and whether the TCP connection still echoes (`ok`, or the error that ended it)."""
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    datagrams = socket.socket(family, socket.SOCK_DGRAM)
    datagrams.settimeout(0.5)
    datagrams.connect((args.host, args.port))
    stream = socket.create_connection((args.host, args.port), timeout=2)
    stream.settimeout(2)
    ended = None
    samples = []
    began = time.monotonic()
    while watching(args, began):
        at = round(time.monotonic() - began, 3)
        try:
            datagrams.send(b"?")
            seen = datagrams.recv(256).decode()
        except socket.timeout:
            seen = "timeout"
        except OSError as error:
            seen = outcome(error)
        if ended is None:
            try:
                stream.sendall(b"x")
                if not stream.recv(16):
                    ended = "eof"
            except socket.timeout:
                ended = "timeout"
            except OSError as error:
                ended = outcome(error)
        samples.append({"at": at, "udp_source": seen, "tcp": ended or "ok"})
        mark_ready(args, began)
        time.sleep(0.1)
    watched(samples, began)


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    s = modes.add_parser("serve")
    s.add_argument("--address", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--report", required=True)
    s.add_argument("--ready", required=True)
    s.add_argument("--udp", action="store_true", help="also echo datagrams on the port")
    s.add_argument("--udp-tell", action="store_true", help="answer each datagram with its source's address:port")
    h = modes.add_parser("hold")
    h.add_argument("--host", required=True)
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--count", type=int, default=1)
    h.add_argument("--report", required=True)
    h.add_argument("--ready", required=True)
    h.add_argument("--probe", required=True)
    t = modes.add_parser("tries")
    t.add_argument("--host", required=True)
    t.add_argument("--port", type=int, required=True)
    t.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
    t.add_argument("--count", type=int, default=20)
    t.add_argument("--timeout", type=float, default=5)
    t.add_argument("--recverr", action="store_true", help="ask for every ICMP error (IP_RECVERR, IPV6_RECVERR)")
    t.add_argument("--blocking", action="store_true", help="connect in blocking mode (the timeout as SO_SNDTIMEO)")
    n = modes.add_parser("lookup")
    n.add_argument("--name", required=True)
    n.add_argument("--count", type=int, default=20)
    w = modes.add_parser("link-watch")
    w.add_argument("--host", required=True)
    w.add_argument("--port", type=int, required=True)
    w.add_argument("--iface", required=True)
    w.add_argument("--timeout", type=float, default=0.3)
    v = modes.add_parser("handover-watch")
    v.add_argument("--host", required=True)
    v.add_argument("--port", type=int, required=True)
    for watch in (w, v):
        watch.add_argument("--moved", required=True, help="the file whose appearance says the condition changed")
        watch.add_argument("--after", type=float, required=True, help="how long to watch once MOVED appears")
        watch.add_argument("--seconds", type=float, default=60, help="the most a watch lasts")
        watch.add_argument("--ready", help="a file to create once the watch has sampled for --ready-after seconds")
        watch.add_argument("--ready-after", type=float, default=1.0)
    args = parser.parse_args()
    args.moved_seen = None
    {"serve": serve, "hold": hold, "tries": tries, "lookup": lookup, "link-watch": link_watch, "handover-watch": handover_watch}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
