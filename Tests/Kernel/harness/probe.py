#!/usr/bin/env python3
"""Packet-level measurements for the linkcond kernel suite (standard library only).

serve       all servers in one process (run in the server namespace):
              UDP echo 7 and 53, TCP echo 22 and 53, TCP sink 5001 (upload),
              TCP source 5002 (download), UDP counter/blaster 9000,
              and a control channel on a Unix socket (never crosses the shaped link).
rtt         round trips to several targets, interleaved, one JSON object per target.
throughput  TCP bulk transfer, goodput measured at the receiver over a steady-state window.
loss        numbered UDP datagrams one way, counted at the receiver.
session     hold one TCP echo connection open until a file appears, then echo again.
stream      timestamped UDP packets at a steady rate, up and/or down, for one-way delays.
oneway      the same, summarized per direction: delays' median, quantiles, spread, reordering.
trickle     a slow TCP transfer until a file appears, then check every byte arrived.

Every client command prints one JSON document on stdout.
"""

import argparse
import json
import os
import socket
import statistics
import struct
import sys
import threading
import time

UDP_ECHO_PORTS = (7, 53)
TCP_ECHO_PORTS = (22, 53)
SINK_PORT = 5001
SOURCE_PORT = 5002
COUNTER_PORT = 9000
MAGIC = b"LCPR"
SEG = struct.Struct("!4sQI")  # magic, run id, sequence number
STAMPED = b"LCTS"
TSEG = struct.Struct("!4sQIq")  # magic, run id, sequence number, CLOCK_MONOTONIC ns at sending
STREAM_PAD = 32  # bytes after a stream packet's stamp, unless a caller sizes its frames


def now():
    return time.monotonic()


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def stamp_arrivals(s):
    """Has the kernel stamp each datagram as it arrives (SO_TIMESTAMPNS): a receiver held up by
    a busy machine then still reads when each packet came, not when it was read."""
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def realtime_ahead_ns():
    """CLOCK_REALTIME minus CLOCK_MONOTONIC, from a read of one between two of the other: the
    tightest of three pairs, since a thread preempted between two reads would be off by as much."""
    best = None
    for _ in range(3):
        before = time.monotonic_ns()
        real = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, real - (before + after) // 2)
    return best[1]


def recv_stamped(s, size):
    """(data, address, arrival in CLOCK_MONOTONIC ns) from a socket `stamp_arrivals` set up.
    The kernel's stamp is CLOCK_REALTIME; the two clocks' difference is read right after."""
    data, ancillary, _, addr = s.recvmsg(size, socket.CMSG_SPACE(16))
    offset = realtime_ahead_ns()
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            return data, addr, seconds * 1_000_000_000 + nanoseconds - offset
    return data, addr, time.monotonic_ns()


def parse_target(spec):
    """udp:HOST:PORT, tcp:HOST:PORT, tcpconnect:HOST:PORT; IPv6 hosts in brackets."""
    kind, rest = spec.split(":", 1)
    if rest.startswith("["):
        host, port = rest[1:].split("]:", 1)
    else:
        host, port = rest.rsplit(":", 1)
    if kind not in ("udp", "tcp", "tcpconnect"):
        raise SystemExit("unknown target kind: %s" % kind)
    return kind, host, int(port)


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def dual_stack(kind, port):
    s = socket.socket(socket.AF_INET6, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    return s


def v4mapped(addr):
    """Address tuple usable with a dual-stack socket."""
    host = addr[0]
    if ":" not in host:
        host = "::ffff:" + host
    return (host, addr[1], 0, 0)


def recv_exact(c, n):
    """n bytes from stream socket c, or None if the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = c.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def big_rcvbuf(s, size=4 << 20):
    """As root, exceed net.core.rmem_max: a slow (emulated) reader must not drop datagrams."""
    try:
        s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), size)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


IPV6_DSTOPTS = getattr(socket, "IPV6_DSTOPTS", 59)


def carry_header_options(s, host):
    """Has every packet S sends carry IPv4 options (three NOPs and an end: a 24-byte header) or an
    IPv6 destination-options extension header (PadN): what a filter must parse past to find the
    ports."""
    if family_of(host) == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_DSTOPTS, bytes([0, 0, 1, 4, 0, 0, 0, 0]))
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, bytes([1, 1, 1, 0]))


def pktinfo_from(source):
    """The ancillary data that has a datagram of a dual-stack socket leave from SOURCE (an
    address of this host's, IPv4 or IPv6), or None without one."""
    if not source:
        return None
    address = socket.inet_pton(socket.AF_INET6, v4mapped((source, 0))[0])
    return [(socket.IPPROTO_IPV6, socket.IPV6_PKTINFO, address + bytes(4))]


def spawn(fn, *args):
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


# ---------------------------------------------------------------- server

class Server:
    def __init__(self, silent=False):
        # A server that answers nothing (`serve --silent`): what the suite must notice, every
        # check of a reply failing rather than reading silence as the condition's.
        self.silent = silent
        self.lock = threading.Lock()
        self.counts = {}      # run id -> set of sequence numbers (UDP counter)
        self.stamps = {}      # run id -> [(seq, sent ns, received ns)] (timestamped packets)
        self.altered = {}     # run id -> timestamped packets whose pad (zeros as sent) arrived changed
        self.sinks = {}       # run id -> [(t, cumulative bytes)]
        self.counter = None
        # What the echo servers answered, per "udp/PORT" and "tcp/PORT": a test that expects
        # silence at the client proves with these that the server did answer.
        self.echoed = {}

    def count_echo(self, key):
        with self.lock:
            self.echoed[key] = self.echoed.get(key, 0) + 1

    def udp_echo(self, port):
        """Replies from the address each datagram was sent to (IPV6_PKTINFO, which also carries
        IPv4-mapped addresses), so that a server with several addresses on one link answers as
        each of them; routing alone would pick one source for all."""
        s = dual_stack(socket.SOCK_DGRAM, port)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
        while True:
            data, ancillary, _, addr = s.recvmsg(65535, socket.CMSG_SPACE(20))
            reply_from = [(level, kind, info[:16] + bytes(4)) for level, kind, info in ancillary
                          if level == socket.IPPROTO_IPV6 and kind == socket.IPV6_PKTINFO and len(info) >= 20]
            if self.silent:
                continue
            try:
                s.sendmsg([data], reply_from, 0, addr)
                self.count_echo("udp/%d" % port)
            except OSError:
                pass

    def tcp_echo_conn(self, c, port):
        with c:
            c.settimeout(600)
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        return
                    if self.silent:
                        continue
                    c.sendall(data)
                    self.count_echo("tcp/%d" % port)
            except OSError:
                return

    def tcp_echo(self, port):
        s = dual_stack(socket.SOCK_STREAM, port)
        s.listen(64)
        while True:
            c, _ = s.accept()
            spawn(self.tcp_echo_conn, c, port)

    def sink_conn(self, c):
        with c:
            c.settimeout(120)
            try:
                head = recv_exact(c, 8)
                if head is None:
                    return
                rid = struct.unpack("!Q", head)[0]
                series = [(now(), 0)]
                if not self.silent:
                    with self.lock:
                        self.sinks[rid] = series
                total = 0
                while True:
                    n = len(c.recv(65536))
                    if n == 0:
                        return
                    total += n
                    t = now()
                    if t - series[-1][0] >= 0.01 or len(series) == 1:
                        series.append((t, total))
                    else:
                        series[-1] = (t, total)
            except OSError:
                return

    def source_conn(self, c):
        with c:
            c.settimeout(120)
            buf = b"\0" * 65536
            try:
                while not self.silent:
                    c.sendall(buf)
            except OSError:
                return

    def accept_loop(self, port, handler, rcvbuf=None):
        s = dual_stack(socket.SOCK_STREAM, port)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.listen(16)
        while True:
            c, _ = s.accept()
            spawn(handler, c)

    def udp_counter(self):
        s = self.counter
        while True:
            data, _, received = recv_stamped(s, 65535)
            if self.silent:
                continue
            if len(data) >= TSEG.size and data[:4] == STAMPED:
                _, rid, seq, sent = TSEG.unpack_from(data)
                with self.lock:
                    self.stamps.setdefault(rid, []).append((seq, sent, received))
                    if data.count(0, TSEG.size) != len(data) - TSEG.size:
                        self.altered[rid] = self.altered.get(rid, 0) + 1
                continue
            if len(data) < SEG.size:
                continue
            magic, rid, seq = SEG.unpack_from(data)
            if magic != MAGIC:
                continue
            with self.lock:
                self.counts.setdefault(rid, set()).add(seq)

    def blast(self, host, port, rid, count, gap):
        """COUNT numbered datagrams to HOST:PORT; how many the kernel took, and the seconds."""
        dst = v4mapped((host, port))
        pad = b"\0" * 32
        t0 = now()
        sent = 0
        for seq in range(0 if self.silent else count):
            try:
                self.counter.sendto(SEG.pack(MAGIC, rid, seq) + pad, dst)
                sent += 1
            except OSError:
                pass
            pace(t0, seq + 1, gap)
        return sent, now() - t0

    def stream(self, host, port, rid, rate, duration, pad_bytes=STREAM_PAD, catch_up=None, until=None, source=None):
        dst = v4mapped((host, port))
        # From SOURCE, the address the client streams with: a server with several addresses on
        # one link would otherwise send from whichever routing picks, for every client.
        ancillary = pktinfo_from(source)
        pad = b"\0" * pad_bytes
        gap = 1.0 / rate
        t0 = now()
        sending = Sending(duration, until)
        seq = 0
        refused = 0
        # The longest run sent back to back to catch up after the sender was held up.
        burst = run = 0
        while sending:
            try:
                if not self.silent:
                    packet = TSEG.pack(STAMPED, rid, seq, time.monotonic_ns()) + pad
                    if ancillary:
                        try:
                            self.counter.sendmsg([packet], ancillary, 0, dst)
                        except OSError:
                            if seq:
                                raise
                            # SOURCE is not an address of this server's: from what routing picks.
                            ancillary = None
                            self.counter.sendto(packet, dst)
                    else:
                        self.counter.sendto(packet, dst)
            except OSError:
                refused += 1
            seq += 1
            run = run + 1 if t0 + seq * gap <= now() else 0
            burst = max(burst, run)
            t0 = stream_schedule(t0, seq, gap, STREAM_CATCH_UP if catch_up is None else catch_up)
            pace(t0, seq, gap)
        return seq, refused, burst

    def control(self, c):
        with c:
            f = c.makefile("rwb")
            req = json.loads(f.readline())
            op = req["op"]
            if op == "ping":
                rep = {"ok": True}
            elif op == "count":
                with self.lock:
                    rep = {"received": len(self.counts.get(req["id"], ()))}
            elif op == "sink":
                with self.lock:
                    rep = {"series": list(self.sinks.get(req["id"], []))}
            elif op == "stamps":
                with self.lock:
                    rep = {"packets": list(self.stamps.get(req["id"], [])), "altered": self.altered.get(req["id"], 0)}
            elif op == "stream":
                sent, refused, burst = self.stream(req["host"], req["port"], req["id"], req["rate"], req["duration"],
                                                   req.get("pad", STREAM_PAD), req.get("catch_up"), req.get("until"),
                                                   req.get("source"))
                rep = {"sent": sent, "send_refused": refused, "longest_burst": burst}
            elif op == "blast":
                sent, took = self.blast(req["host"], req["port"], req["id"], req["count"], req["gap"])
                rep = {"sent": sent, "seconds": took}
            elif op == "echoed":
                with self.lock:
                    rep = {"echoed": dict(self.echoed)}
            else:
                rep = {"error": "unknown op %s" % op}
            f.write(json.dumps(rep).encode() + b"\n")
            f.flush()

    def run(self, ctl_path, sink_rcvbuf):
        for p in UDP_ECHO_PORTS:
            spawn(self.udp_echo, p)
        for p in TCP_ECHO_PORTS:
            spawn(self.tcp_echo, p)
        spawn(self.accept_loop, SINK_PORT, self.sink_conn, sink_rcvbuf)
        spawn(self.accept_loop, SOURCE_PORT, self.source_conn)
        self.counter = dual_stack(socket.SOCK_DGRAM, COUNTER_PORT)
        big_rcvbuf(self.counter)
        stamp_arrivals(self.counter)
        spawn(self.udp_counter)
        try:
            os.unlink(ctl_path)
        except FileNotFoundError:
            pass
        ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ctl.bind(ctl_path)
        ctl.listen(16)
        print("probe server ready", file=sys.stderr, flush=True)
        while True:
            c, _ = ctl.accept()
            spawn(self.control, c)


def ctl_call(path, req, timeout=120):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    with s:
        f = s.makefile("rwb")
        f.write(json.dumps(req).encode() + b"\n")
        f.flush()
        line = f.readline()
    if not line:
        raise SystemExit("control channel closed without reply")
    return json.loads(line)


def pace(t0, n, gap):
    delay = t0 + n * gap - now()
    if delay > 0:
        time.sleep(delay)


# A stream's sender held up (a busy emulated VM) sends at most this many packets back to back to
# catch up, then goes on from where it is: a burst of hundreds could be dropped on its way, and
# would be counted as the link's loss.
STREAM_CATCH_UP = 5


class Sending:
    """How long a stream's sender goes on: `duration` seconds, or until the file `until` appears
    (looked for ten times a second), whichever comes first. A test that must stop a stream at a
    moment it learns only while the stream runs (a trace's start) makes the file."""

    def __init__(self, duration, until=None):
        self.end = now() + duration
        self.until = until
        self.looked = 0.0

    def __bool__(self):
        t = now()
        if self.until and t < self.end and t - self.looked >= 0.1:
            self.looked = t
            if os.path.exists(self.until):
                self.end = t
        return t < self.end


def stream_schedule(t0, sent, gap, catch_up=STREAM_CATCH_UP):
    """The start `pace` measures a stream's next packet from: `t0`, or later for a sender that
    fell more than `catch_up` packets behind."""
    behind = now() - (t0 + sent * gap)
    return t0 + behind - catch_up * gap if behind > catch_up * gap else t0


def run_id():
    return int.from_bytes(os.urandom(8), "big") >> 1


# ---------------------------------------------------------------- rtt

def rtt_udp(host, port, timeout):
    """One echo's round trip, ended when the kernel received the reply (its arrival stamp), not
    when this process woke to read it: asleep through a 100 ms round trip under emulation, it
    wakes milliseconds late."""
    s = socket.socket(family_of(host), socket.SOCK_DGRAM)
    try:
        stamp_arrivals(s)
        s.connect((host, port))
        token = os.urandom(16)
        t0 = now()
        sent_ns = time.monotonic_ns()
        s.send(token)
        deadline = t0 + timeout
        while True:
            s.settimeout(max(0.001, deadline - now()))
            try:
                data, _, arrived_ns = recv_stamped(s, 2048)
            except (socket.timeout, ConnectionRefusedError):
                return None, None
            if data == token:
                return (arrived_ns - sent_ns) / 1e6, None
    finally:
        s.close()


def rtt_tcp(host, port, timeout, echo):
    s = socket.socket(family_of(host), socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        t0 = now()
        try:
            s.connect((host, port))
        except OSError:
            return None, None
        connect_ms = (now() - t0) * 1000.0
        if not echo:
            return connect_ms, None
        token = os.urandom(16)
        t1 = now()
        try:
            s.sendall(token)
            got = b""
            while len(got) < len(token):
                chunk = s.recv(len(token) - len(got))
                if not chunk:
                    return connect_ms, None
                got += chunk
        except OSError:
            return connect_ms, None
        if got != token:
            return connect_ms, None
        return connect_ms, (now() - t1) * 1000.0
    finally:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()


def summary(samples):
    if not samples:
        return {"median_ms": None, "min_ms": None, "max_ms": None}
    return {
        "median_ms": round(statistics.median(samples), 3),
        "min_ms": round(min(samples), 3),
        "max_ms": round(max(samples), 3),
    }


def cmd_rtt(a):
    targets = [parse_target(t) for t in a.target]
    res = [{"target": spec, "sent": 0, "received": 0, "samples": [], "echo": []}
           for spec in a.target]
    for _ in range(a.rounds):
        for (kind, host, port), r in zip(targets, res):
            t0 = now()
            r["sent"] += 1
            if kind == "udp":
                ms, _ = rtt_udp(host, port, a.timeout)
                echo_ms = None
            else:
                ms, echo_ms = rtt_tcp(host, port, a.timeout, kind == "tcp")
                if kind == "tcp" and echo_ms is None:
                    ms = None
            if ms is not None:
                r["received"] += 1
                r["samples"].append(round(ms, 3))
                if echo_ms is not None:
                    r["echo"].append(round(echo_ms, 3))
            pace(t0, 1, a.interval)
    out = []
    for r in res:
        d = {"target": r["target"], "sent": r["sent"], "received": r["received"]}
        d.update(summary(r["samples"]))
        if r["echo"]:
            d["echo_median_ms"] = round(statistics.median(r["echo"]), 3)
        d["samples_ms"] = r["samples"]
        out.append(d)
    json.dump(out, sys.stdout, indent=1)
    print()


# ---------------------------------------------------------------- throughput

def steady_rate(series, skip, duration):
    """Goodput between the first arrival at or after first+skip and the last at or before
    first+duration; bytes counted are those arriving strictly after the window's start point."""
    pts = [p for p in series if p[1] > 0]
    if len(pts) < 3:
        return None, 0, 0.0
    first = pts[0][0]
    win = [p for p in pts if first + skip <= p[0] <= first + duration]
    if len(win) < 2:
        return None, 0, 0.0
    (ta, ba), (tb, bb) = win[0], win[-1]
    if tb <= ta:
        return None, 0, 0.0
    return (bb - ba) * 8.0 / (tb - ta), bb - ba, tb - ta


def cmd_throughput(a):
    host = a.host
    rid = run_id()
    fam = family_of(host)
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(a.duration + 30)
    if a.dir == "down" and a.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    s.connect((host, SINK_PORT if a.dir == "up" else SOURCE_PORT))
    t_start = now()
    series = [(t_start, 0)]
    if a.dir == "up":
        s.sendall(struct.pack("!Q", rid))
        buf = b"\0" * 16384
        s.settimeout(1.0)
        while now() - t_start < a.duration + a.skip:
            try:
                s.send(buf)
            except socket.timeout:
                pass
        series = [tuple(p) for p in ctl_call(a.ctl, {"op": "sink", "id": rid})["series"]]
    else:
        total = 0
        s.settimeout(1.0)
        while now() - t_start < a.duration + a.skip:
            try:
                n = len(s.recv(65536))
            except socket.timeout:
                continue
            if n == 0:
                break
            total += n
            t = now()
            if t - series[-1][0] >= 0.01 or len(series) == 1:
                series.append((t, total))
            else:
                series[-1] = (t, total)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    rate, nbytes, secs = steady_rate(series, a.skip, a.duration + a.skip)
    link = rate * a.frame / a.payload if rate is not None else None
    json.dump({
        "dir": a.dir, "host": host,
        "goodput_bps": round(rate, 1) if rate is not None else None,
        "link_bps": round(link, 1) if link is not None else None,
        "window_bytes": nbytes, "window_s": round(secs, 3),
        "total_bytes": series[-1][1] if series else 0,
        "frame_bytes": a.frame, "payload_bytes": a.payload,
        **({"series": [(round(t - series[0][0], 4), b) for t, b in series]} if a.series else {}),
    }, sys.stdout)
    print()


# ---------------------------------------------------------------- loss

def cmd_loss(a):
    out = []
    for task in a.task:
        direction, host = task.split(":", 1)
        rid = run_id()
        fam = family_of(host)
        if direction == "up":
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.connect((host, COUNTER_PORT))
            pad = b"\0" * 32
            t0 = now()
            sent = 0
            for seq in range(a.count):
                try:
                    s.send(SEG.pack(MAGIC, rid, seq) + pad)
                    sent += 1
                except OSError:
                    pass
                pace(t0, seq + 1, a.gap)
            s.close()
            time.sleep(a.grace)
            got = ctl_call(a.ctl, {"op": "count", "id": rid})["received"]
        elif direction == "down":
            probe = socket.socket(fam, socket.SOCK_DGRAM)
            probe.connect((host, COUNTER_PORT))
            local = probe.getsockname()[0]
            probe.close()
            s = socket.socket(fam, socket.SOCK_DGRAM)
            big_rcvbuf(s)
            s.bind((local, 0))
            port = s.getsockname()[1]
            seen = set()
            done = threading.Event()
            reply = {}

            def ask():
                reply.update(ctl_call(a.ctl, {"op": "blast", "host": local, "port": port,
                                              "id": rid, "count": a.count, "gap": a.gap}))
                done.set()

            spawn(ask)
            deadline = None
            s.settimeout(0.2)
            while True:
                if done.is_set() and deadline is None:
                    deadline = now() + a.grace
                if deadline is not None and now() >= deadline:
                    break
                try:
                    data = s.recv(2048)
                except socket.timeout:
                    continue
                if len(data) >= SEG.size:
                    magic, r, seq = SEG.unpack_from(data)
                    if magic == MAGIC and r == rid:
                        seen.add(seq)
            s.close()
            got = len(seen)
            sent = reply.get("sent", 0)
        else:
            raise SystemExit("task must be up:HOST or down:HOST")
        # "sent": what the sender's kernel took (a server that sent nothing says so).
        out.append({"task": task, "sent": sent, "received": got,
                    "ratio": round(got / a.count, 4)})
    json.dump(out, sys.stdout, indent=1)
    print()


# ---------------------------------------------------------------- stream

def stream_up(a, host, out, pad_bytes=STREAM_PAD):
    rid = run_id()
    s = socket.socket(family_of(host), socket.SOCK_DGRAM)
    if getattr(a, "ip_options", 0):
        carry_header_options(s, host)
    s.connect((host, COUNTER_PORT))
    pad = b"\0" * pad_bytes
    gap = 1.0 / a.rate
    if getattr(a, "ready", None) and a.dir == "up":
        open(a.ready, "w").close()
    t0 = now()
    sending = Sending(a.duration, getattr(a, "until", None))
    seq = 0
    refused = 0
    while sending:
        try:
            s.send(TSEG.pack(STAMPED, rid, seq, time.monotonic_ns()) + pad)
        except OSError:
            refused += 1
        seq += 1
        t0 = stream_schedule(t0, seq, gap, getattr(a, "catch_up", STREAM_CATCH_UP))
        pace(t0, seq, gap)
    s.close()
    time.sleep(a.grace)
    stamps = ctl_call(a.ctl, {"op": "stamps", "id": rid})
    # "altered": packets that arrived with their pad changed on the way (a corruption that no
    # checksum caught).
    out["up"] = {"sent": seq, "packets": stamps["packets"], "altered": stamps.get("altered"), "send_refused": refused}


def stream_down(a, host, out, pad_bytes=STREAM_PAD):
    rid = run_id()
    probe = socket.socket(family_of(host), socket.SOCK_DGRAM)
    probe.connect((host, COUNTER_PORT))
    local = probe.getsockname()[0]
    probe.close()
    s = socket.socket(family_of(host), socket.SOCK_DGRAM)
    big_rcvbuf(s)
    stamp_arrivals(s)
    s.bind((local, 0))
    packets = []
    late = []
    corrupted = 0
    reply = {}
    done = threading.Event()

    def ask():
        reply.update(ctl_call(a.ctl, {"op": "stream", "host": local, "port": s.getsockname()[1],
                                      "id": rid, "rate": a.rate, "duration": a.duration,
                                      "pad": pad_bytes, "catch_up": getattr(a, "catch_up", STREAM_CATCH_UP),
                                      "until": getattr(a, "until", None), "source": host},
                              timeout=a.duration + 60))
        done.set()

    spawn(ask)
    s.settimeout(0.2)
    deadline = None
    while deadline is None or now() < deadline:
        if done.is_set() and deadline is None:
            deadline = now() + a.grace
        try:
            data, _, received = recv_stamped(s, 2048)
        except socket.timeout:
            continue
        if len(data) >= TSEG.size and data[:4] == STAMPED:
            _, r, seq, sent = TSEG.unpack_from(data)
            if r == rid:
                if not packets and getattr(a, "ready", None):
                    open(a.ready, "w").close()
                packets.append((seq, sent, received))
                late.append(time.monotonic_ns() - received)
                # The pad is zeros as sent: a bit set in it was flipped on the way.
                if data.count(0, TSEG.size) != len(data) - TSEG.size or len(data) != TSEG.size + pad_bytes:
                    corrupted += 1
    s.close()
    # How long after arriving the packets were read: what stamping them on arrival left out.
    late.sort()
    out["down"] = {"sent": reply.get("sent", 0), "packets": packets, "corrupted": corrupted,
                   "send_refused": reply.get("send_refused"), "longest_burst": reply.get("longest_burst"),
                   "read_late_ms": {"median": round(late[len(late) // 2] / 1e6, 2), "max": round(late[-1] / 1e6, 2)} if late else None}


def streams(a):
    """Each direction's stream that A asks for, at once: their results by direction."""
    out = {}
    threads = []
    if a.dir in ("up", "both"):
        threads.append(spawn(stream_up, a, a.host, out, a.pad))
    if a.dir in ("down", "both"):
        threads.append(spawn(stream_down, a, a.host, out, a.pad))
    for t in threads:
        t.join()
    return out


def cmd_stream(a):
    json.dump(streams(a), sys.stdout)
    print()


def quantile(sorted_values, q):
    """Linear interpolation between closest ranks."""
    if not sorted_values:
        return None
    pos = q * (len(sorted_values) - 1)
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def summarize_oneway(result):
    """One direction of `stream`'s output as delay statistics in ms. Both namespaces share the
    VM's CLOCK_MONOTONIC, so a packet's receive time minus its send time is its one-way delay."""
    packets = result.get("packets", [])
    delays = sorted((received - sent) / 1e6 for _, sent, received in packets)
    # The order the socket gave them (the kernel's stamps of two CPUs may differ by microseconds).
    arrival_order = [seq for seq, _, _ in packets]
    reordered = sum(1 for i in range(1, len(arrival_order)) if arrival_order[i] < arrival_order[i - 1])
    out = {"sent": result.get("sent", 0), "received": len(delays), "reordered": reordered}
    if delays:
        out.update({
            "median_ms": round(quantile(delays, 0.5), 3),
            "mean_ms": round(statistics.fmean(delays), 3),
            "stdev_ms": round(statistics.pstdev(delays), 3),
            "min_ms": round(delays[0], 3),
            "max_ms": round(delays[-1], 3),
            "quantiles_ms": {str(q): round(quantile(delays, q), 3) for q in (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)},
        })
    return out


def cmd_oneway(a):
    json.dump({d: summarize_oneway(r) for d, r in streams(a).items()}, sys.stdout)
    print()


# ---------------------------------------------------------------- udprate

def cmd_udprate(a):
    """Link rate of one shaped direction, or of both at once. Full-size UDP frames offered above
    the rate keep the shaper's queue full, so they leave it, and arrive, exactly at the shaped
    rate: unlike a TCP transfer, no sender stall or retransmission can pass for lost capacity.
    `--arrivals` adds each frame's arrival (kernel stamp, CLOCK_MONOTONIC ns), for a rate that
    changes over time (a trace); `--packets` each frame's sequence number and send stamp too,
    which tell whether the sender kept offering more than the link carried."""
    ip_header = 20 if family_of(a.host) == socket.AF_INET else 40
    pad_bytes = a.frame - 14 - ip_header - 8 - TSEG.size
    a.rate = max(2.0, a.offer * a.bps / (a.frame * 8))
    directions = ("up", "down") if a.dir == "both" else (a.dir,)
    out = {}
    threads = [spawn(stream_up if d == "up" else stream_down, a, a.host, out, pad_bytes) for d in directions]
    for t in threads:
        t.join()
    result = {"dir": a.dir, "host": a.host, "offered_pps": round(a.rate, 2), "frame_bytes": a.frame}
    for d in directions:
        arrivals = sorted(p[2] for p in out[d]["packets"])
        window = [t for t in arrivals if t >= arrivals[0] + a.skip * 1e9]
        link = None
        if len(window) >= 3 and window[-1] > window[0]:
            link = (len(window) - 1) * a.frame * 8 / ((window[-1] - window[0]) / 1e9)
        result[d] = {
            "sent": out[d]["sent"], "received": len(arrivals), "window_frames": len(window),
            "window_s": round((window[-1] - window[0]) / 1e9, 3) if len(window) >= 2 else 0.0,
            "link_bps": round(link, 1) if link is not None else None,
        }
        if a.arrivals:
            result[d]["arrivals_ns"] = arrivals
        if a.packets:
            result[d]["packets"] = out[d]["packets"]
    if a.dir != "both":
        result.update(result.pop(a.dir))
    json.dump(result, sys.stdout)
    print()


# ---------------------------------------------------------------- trickle

def cmd_trickle(a):
    rid = run_id()
    res = {"sent": 0, "received": 0, "error": None, "drain_s": None}
    s = socket.socket(family_of(a.host), socket.SOCK_STREAM)
    s.settimeout(a.timeout)
    try:
        s.connect((a.host, SINK_PORT))
        s.sendall(struct.pack("!Q", rid))
        chunk = b"\x5a" * a.chunk
        t0 = now()
        n = 0
        while not os.path.exists(a.until):
            s.sendall(chunk)
            res["sent"] += len(chunk)
            n += 1
            pace(t0, n, a.gap)
        s.shutdown(socket.SHUT_WR)
        t1 = now()
        while now() - t1 < a.drain:
            series = ctl_call(a.ctl, {"op": "sink", "id": rid})["series"]
            res["received"] = series[-1][1] - 0 if series else 0
            if res["received"] >= res["sent"]:
                res["drain_s"] = round(now() - t1, 3)
                break
            time.sleep(0.5)
    except OSError as e:
        res["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()
    json.dump(res, sys.stdout)
    print()


# ---------------------------------------------------------------- session

def cmd_session(a):
    kind, host, port = parse_target(a.target)
    res = {"target": a.target, "connected": False, "before": False, "after": False}
    s = socket.socket(family_of(host), socket.SOCK_STREAM)
    s.settimeout(a.timeout)

    def echo(tag):
        token = tag + os.urandom(8)
        s.sendall(token)
        got = b""
        while len(got) < len(token):
            chunk = s.recv(64)
            if not chunk:
                break
            got += chunk
        return got == token

    try:
        s.connect((host, port))
        res["connected"] = True
        res["before"] = echo(b"before")
        print("session open", file=sys.stderr, flush=True)
        deadline = now() + a.wait
        while not os.path.exists(a.until) and now() < deadline:
            time.sleep(0.1)
        res["after"] = echo(b"after")
    except OSError as e:
        res["error"] = str(e)
    finally:
        s.close()
    json.dump(res, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    sp = sub.add_parser("serve")
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--silent", action="store_true", help="answer nothing (the suite's own fault)")
    sp.add_argument("--sink-rcvbuf", type=int, default=0,
                    help="upload receive buffer, 0 = kernel autotuning; a small one makes a slow "
                         "reader drop segments that already crossed the shaper")

    sp = sub.add_parser("rtt")
    sp.add_argument("--target", action="append", required=True)
    sp.add_argument("--rounds", type=int, default=15)
    sp.add_argument("--interval", type=float, default=0.3)
    sp.add_argument("--timeout", type=float, default=3.0)

    sp = sub.add_parser("throughput")
    sp.add_argument("--dir", choices=("up", "down"), required=True)
    sp.add_argument("--host", required=True)
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--duration", type=float, default=17.0, help="measured window, seconds")
    sp.add_argument("--skip", type=float, default=3.0, help="start-up excluded, seconds")
    sp.add_argument("--rcvbuf", type=int, default=0,
                    help="download receive buffer, 0 = kernel autotuning")
    sp.add_argument("--frame", type=int, default=1514, help="link bytes per full segment")
    sp.add_argument("--payload", type=int, default=1448, help="TCP payload per full segment")
    sp.add_argument("--series", action="store_true", help="include the arrival series")

    sp = sub.add_parser("loss")
    sp.add_argument("--task", action="append", required=True, help="up:HOST or down:HOST")
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--count", type=int, default=2000)
    sp.add_argument("--gap", type=float, default=0.001, help="seconds between datagrams")
    sp.add_argument("--grace", type=float, default=1.5)

    sp = sub.add_parser("session")
    sp.add_argument("--target", required=True)
    sp.add_argument("--until", required=True, help="file whose appearance ends the wait")
    sp.add_argument("--wait", type=float, default=300)
    sp.add_argument("--timeout", type=float, default=30)

    sp = sub.add_parser("stream")
    sp.add_argument("--host", required=True)
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--dir", choices=("up", "down", "both"), default="both")
    sp.add_argument("--rate", type=float, default=25, help="packets per second each way")
    sp.add_argument("--duration", type=float, required=True)
    sp.add_argument("--grace", type=float, default=3.0)
    sp.add_argument("--ready", help="file created when the first packet down arrives (when sending up starts, up alone)")
    sp.add_argument("--pad", type=int, default=STREAM_PAD, help="payload bytes after the stamp")
    sp.add_argument("--catch-up", type=int, default=STREAM_CATCH_UP,
                    help="packets a held-up sender sends back to back to catch up (a flood that must keep its rate: many)")

    sp = sub.add_parser("oneway")
    sp.add_argument("--host", required=True)
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--dir", choices=("up", "down", "both"), default="both")
    sp.add_argument("--rate", type=float, default=50, help="packets per second each way")
    sp.add_argument("--duration", type=float, required=True)
    sp.add_argument("--grace", type=float, default=2.0)
    sp.add_argument("--pad", type=int, default=STREAM_PAD, help="payload bytes after the stamp")
    sp.add_argument("--catch-up", type=int, default=STREAM_CATCH_UP,
                    help="packets a held-up sender sends back to back to catch up (a flood that must keep its rate: many)")
    sp.add_argument("--ip-options", type=int, default=0,
                    help="1: the up stream's packets carry IPv4 options or an IPv6 destination-options header")

    sp = sub.add_parser("udprate")
    sp.add_argument("--host", required=True)
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--dir", choices=("up", "down", "both"), required=True)
    sp.add_argument("--bps", type=float, required=True, help="the shaped rate, bit/s on the link")
    sp.add_argument("--offer", type=float, default=1.5, help="offered load, times the shaped rate")
    sp.add_argument("--duration", type=float, default=20.0, help="sending, seconds")
    sp.add_argument("--skip", type=float, default=3.0, help="start-up excluded, seconds")
    sp.add_argument("--frame", type=int, default=1514, help="link bytes per frame")
    sp.add_argument("--grace", type=float, default=2.0)
    sp.add_argument("--arrivals", action="store_true", help="each frame's arrival, CLOCK_MONOTONIC ns")
    sp.add_argument("--packets", action="store_true",
                    help="each frame's [sequence, sent ns, arrival ns]: what its sender offered when")
    sp.add_argument("--ready", help="file made once downlink frames arrive")
    sp.add_argument("--until", help="file whose appearance ends the sending before --duration")

    sp = sub.add_parser("trickle")
    sp.add_argument("--host", required=True)
    sp.add_argument("--ctl", required=True)
    sp.add_argument("--until", required=True, help="file whose appearance ends the sending")
    sp.add_argument("--chunk", type=int, default=256)
    sp.add_argument("--gap", type=float, default=0.1)
    sp.add_argument("--drain", type=float, default=180)
    sp.add_argument("--timeout", type=float, default=600)

    a = p.parse_args()
    if a.cmd == "serve":
        Server(a.silent).run(a.ctl, a.sink_rcvbuf)
    else:
        {"rtt": cmd_rtt, "throughput": cmd_throughput, "loss": cmd_loss,
         "session": cmd_session, "stream": cmd_stream, "oneway": cmd_oneway, "udprate": cmd_udprate,
         "trickle": cmd_trickle}[a.cmd](a)


if __name__ == "__main__":
    main()
