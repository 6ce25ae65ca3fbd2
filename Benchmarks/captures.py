#!/usr/bin/env python3
"""The cost of a packet trace, for the benchmarks (Benchmarks/run.sh, part `captures`), in the
test VM as root, beside a daemon and an iperf3 server. Standard library only.

  captures.py --linkcond BIN --socket SOCK --netns NS --server ADDR --daemon-pid PID --work DIR
              --shaped PROFILE --rates 1000,5000,... --out FILE [--rates-only]

Three measurements, one JSON document:
* rates: UDP of 200-byte datagrams offered by iperf3 at each rate (packets a second) through the
  default condition while `linkcond capture` writes a file; per rate, what iperf3 sent, and the
  trace's own statistics block: packets the capture saw, those it lost (its kernel ring full),
  those written, and the daemon's CPU time for the capture.
* throughput: iperf3 TCP through PROFILE (unshaped without --shaped), alternating rounds with no capture, with a capture read
  into a file, and with a reader that asked for a capture and then never reads (its socket's
  buffer full).
* memory: the daemon's resident memory before, at most during, and after each stalled reader.
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

# The trace's statistics block as the kernel suite reads it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "Tests" / "Kernel"))
from harness.packet_traces import statistics  # noqa: E402


def ns(args, argv):
    return ["ip", "netns", "exec", args.netns, *argv]


def iperf(args, extra, seconds):
    """iperf3's JSON for a run of SECONDS to the server, from the client namespace."""
    result = subprocess.run(ns(args, ["iperf3", "-c", args.server, "-J", "-t", str(seconds), *extra]),
                            capture_output=True, text=True, timeout=seconds + 60)
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {"error": result.stderr.strip() or result.stdout.strip()[:400]}


def cpu_ticks(pid):
    """utime + stime of the daemon, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def trace_counts(path, sent):
    """The packets in the trace's first interface, its statistics block's counts, and how many
    of iperf3's datagrams numbered 1 to SENT (the sequence number after its 8-byte time stamp,
    in Ethernet, IPv4 and UDP to port 5201) it holds, and which are missing."""
    data = open(path, "rb").read()
    offset, packets, sequences = 0, 0, set()
    counts = statistics(Path(path))
    found = {name: counts.get(key) for name, key in
             (("received", "received"), ("conditionDrops", "condition_drops"), ("captureDrops", "capture_drops"), ("written", "delivered"))}
    while offset + 12 <= len(data):
        kind, length = struct.unpack_from("<II", data, offset)
        if length < 12 or offset + length > len(data):
            break
        if kind == 6 and struct.unpack_from("<I", data, offset + 8)[0] == 0:
            packets += 1
            captured = struct.unpack_from("<I", data, offset + 20)[0]
            frame = data[offset + 28:offset + 28 + captured]
            if len(frame) >= 54 and frame[12:14] == b"\x08\x00" and frame[23] == 17 and struct.unpack_from(">H", frame, 36)[0] == 5201:
                sequences.add(struct.unpack_from(">I", frame, 50)[0])
        offset += length
    found["packetsInFile"] = packets
    found["bytes"] = len(data)
    if sent:
        missing = sorted(set(range(1, sent + 1)) - sequences)
        found["iperfPacketsInFile"] = len(sequences & set(range(1, sent + 1)))
        found["iperfMissing"] = len(missing)
        found["iperfMissingFirst"] = missing[:10]
    return found


def begin_capture(args, path, seconds):
    """`linkcond capture -w PATH --for SECONDS`, once its first bytes are written."""
    if os.path.exists(path):
        os.unlink(path)
    process = subprocess.Popen([os.path.join(args.linkcond, "linkcond"), "--socket", args.socket, "capture",
                                "-w", path, "--for", "%ds" % seconds], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            break
        time.sleep(0.05)
    return process


def rates(args):
    results = []
    for rate in [int(r) for r in args.rates.split(",")]:
        path = os.path.join(args.work, "capture-%d.pcapng" % rate)
        capture = begin_capture(args, path, args.seconds + 6)
        ticks = cpu_ticks(args.daemon_pid)
        sent = iperf(args, ["-u", "-l", "200", "-b", str(rate * 200 * 8)], args.seconds)
        _, err = capture.communicate(timeout=60)
        ticks = cpu_ticks(args.daemon_pid) - ticks
        end = sent.get("end", {}).get("sum", {})
        counts = trace_counts(path, end.get("packets")) if os.path.exists(path) else {}
        results.append({
            "offeredPacketsPerSecond": rate, "seconds": args.seconds,
            "iperfPackets": end.get("packets"), "iperfLost": end.get("lost_packets"),
            "iperfError": sent.get("error"), "captureExit": capture.returncode, "captureStderr": err.decode(errors="replace").strip(),
            "daemonCpuSeconds": ticks / os.sysconf("SC_CLK_TCK"), **counts,
        })
        print(json.dumps(results[-1]), flush=True)
        os.unlink(path) if os.path.exists(path) else None
    return results


def stalled_reader(args):
    """A connection that asks for the default condition's capture and never reads a byte."""
    reader = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect(args.socket)
    reader.sendall(b"GET /v1/condition/capture HTTP/1.1\r\nHost: linkcond\r\n\r\n")
    return reader


def throughput(args):
    rounds, memory = [], []
    if args.shaped:
        subprocess.run([os.path.join(args.linkcond, "linkcond"), "--socket", args.socket, "activate", args.shaped],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)
    for round_number in range(args.rounds):
        for mode in ("none", "capture", "stalled"):
            capture = reader = None
            before = rss_kib(args.daemon_pid)
            if mode == "capture":
                capture = begin_capture(args, os.path.join(args.work, "throughput.pcapng"), args.seconds + 4)
            elif mode == "stalled":
                reader = stalled_reader(args)
                time.sleep(1)
            samples = []
            sampling = {"stop": False}
            start = time.monotonic()
            process = subprocess.Popen(ns(args, ["iperf3", "-c", args.server, "-J", "-t", str(args.seconds)]),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while process.poll() is None and time.monotonic() - start < args.seconds + 60:
                samples.append(rss_kib(args.daemon_pid))
                time.sleep(0.25)
            out, err = process.communicate(timeout=60)
            try:
                bits = json.loads(out)["end"]["sum_received"]["bits_per_second"]
            except (ValueError, KeyError):
                bits = None
            if capture:
                capture.communicate(timeout=60)
            if reader:
                reader.close()
                time.sleep(1)
                memory.append({"round": round_number, "beforeKiB": before, "peakKiB": max(s for s in samples if s),
                               "afterKiB": rss_kib(args.daemon_pid)})
            rounds.append({"round": round_number, "mode": mode, "bitsPerSecond": bits, "error": None if bits else err.strip()[:400]})
            print(json.dumps(rounds[-1]), flush=True)
    subprocess.run([os.path.join(args.linkcond, "linkcond"), "--socket", args.socket, "off"],
                   stdout=subprocess.DEVNULL, timeout=60)
    return rounds, memory


def main():
    parser = argparse.ArgumentParser()
    for name in ("--linkcond", "--socket", "--netns", "--server", "--work", "--out"):
        parser.add_argument(name, required=True)
    parser.add_argument("--shaped", help="the profile the throughput rounds run under (none: unshaped)")
    parser.add_argument("--daemon-pid", type=int, required=True)
    parser.add_argument("--rates", default="1000,2000,5000,10000,20000,40000")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rates-only", action="store_true", help="the rates alone, no throughput rounds")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    document = {"rates": rates(args)}
    if not args.rates_only:
        document["throughput"], document["memory"] = throughput(args)
    history = subprocess.run(["curl", "-s", "--unix-socket", args.socket, "http://linkcond/v1/history?limit=200"],
                             capture_output=True, text=True, timeout=60)
    try:
        entries = json.loads(history.stdout).get("entries", [])
    except ValueError:
        entries = []
    document["captureEnds"] = [e.get("detail") for e in entries if e.get("reason") == "capture" and "ended" in (e.get("detail") or "")]
    with open(args.out, "w") as f:
        json.dump(document, f, indent=2)


if __name__ == "__main__":
    main()
