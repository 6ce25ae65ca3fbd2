#!/usr/bin/env python3
"""Hostile requests to linkcondd's control socket, as a local user without rights would send
them: bad methods, paths, queries, headers, bodies, encodings and sizes, truncated and
pipelined requests. Standard library only.

  hostile.py (--socket PATH | --tcp HOST:PORT) [--count N] [--seed S] [--out FILE]

Every answer must be a 4xx with a JSON error document (a HEAD answer has no body, by HTTP's
rules); a request cut short must get a 408 or be closed, never hang. --tcp sends the same to
the metrics listener (--metrics-listen), which any local process may reach, with scrapes of
/metrics among them: those may be answered 200 in Prometheus' text format. Prints one JSON
summary; exits 1 if any answer broke the rules.
"""

import argparse
import errno
import json
import random
import socket
import sys
import threading
import time

ENDPOINTS = ["/v1/status", "/v1/profiles", "/v1/profiles/Slow%20Net", "/v1/history", "/v1/condition",
             "/v1/leases", "/v1/lease", "/v1/reload", "/v1/debug/fault", "/v1/conditions", "/v1/conditions/lo",
             "/v1/conditions/lo/lease", "/v1/scenarios", "/v1/condition/next", "/v1/conditions/lo/next"]
READABLE = ("/v1/status", "/v1/profiles", "/v1/profiles/Slow%20Net", "/v1/history", "/v1/conditions", "/v1/conditions/lo",
            "/v1/scenarios")
METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "TRACE", "HEAD", "PROPFIND", "get", "G E T",
           "X" * 300, "GET\x00", "\x16\x03\x01", "PRI"]


def case(name, raw, expect="4xx", head=False):
    return {"name": name, "raw": raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogateescape"),
            "expect": expect, "head": head}


def request(method="GET", path="/v1/status", headers=None, body=b"", version="HTTP/1.1", length=True):
    if isinstance(body, str):
        body = body.encode()
    lines = ["%s %s %s" % (method, path, version), "Host: linkcondd"]
    lines += headers or []
    if length and body and not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers or []):
        lines.append("Content-Length: %d" % len(body))
    return "\r\n".join(lines).encode("utf-8", "surrogateescape") + b"\r\n\r\n" + body


def generate(count, rng, scrapes=False):
    cases = []
    if scrapes:
        # The listener's one page, asked for well and badly: a scrape may succeed, in text.
        for method in ["GET", "HEAD", "POST", "DELETE", "get"]:
            for path in ["/metrics", "/metrics?x=1", "/metrics/", "//metrics", "/METRICS", "/metrics%00"]:
                cases.append(dict(case("scrape %s %s" % (method, path), request(method, path), expect="any",
                                       head=method == "HEAD"), scrape=True))
        cases.append(dict(case("scrape with a body", request("GET", "/metrics", body="x" * 70000), expect="any"), scrape=True))
        cases.append(dict(case("pipelined scrapes", request("GET", "/metrics") * 50, expect="any"), scrape=True))
    # Changes a user outside the group may not make: 403, nothing changes.
    for body in ['{"profile": "Black Hole"}', '{"profile": "Slow Net", "force": true}', '{"profile": "Nasty Net", "for": "1h"}']:
        cases.append(case("unauthorized activate", request("PUT", "/v1/condition", body=body)))
    cases.append(case("unauthorized off", request("DELETE", "/v1/condition?force=1")))
    cases.append(case("unauthorized lease", request("POST", "/v1/leases", body='{"profile": "Black Hole"}')))
    cases.append(case("unauthorized release", request("DELETE", "/v1/lease")))
    cases.append(case("unauthorized reload", request("POST", "/v1/reload")))
    # The same on another interface's condition, and on all of them.
    cases.append(case("unauthorized activate on lo", request("PUT", "/v1/conditions/lo", body='{"profile": "Black Hole"}')))
    cases.append(case("unauthorized off on lo", request("DELETE", "/v1/conditions/lo?force=1")))
    cases.append(case("unauthorized off --all", request("DELETE", "/v1/conditions?force=1")))
    cases.append(case("unauthorized release on lo", request("DELETE", "/v1/conditions/lo/lease")))
    cases.append(case("unauthorized lease on lo", request("POST", "/v1/leases", body='{"profile": "Black Hole", "interface": "lo"}')))
    # Scenarios: playing one, in a lease or not, and moving one on.
    for body in ['{"scenario": "Subway"}', '{"scenario": "Elevator", "for": "1h"}', '{"scenario": "Subway", "profile": "Slow Net"}',
                 '{"scenario": 5}', '{"scenario": "%s"}' % ("x" * 5000), '{"scenario": "LC Manual\u0000"}']:
        cases.append(case("unauthorized play", request("PUT", "/v1/condition", body=body)))
    cases.append(case("unauthorized play on lo", request("PUT", "/v1/conditions/lo", body='{"scenario": "Subway"}')))
    cases.append(case("unauthorized scenario lease", request("POST", "/v1/leases", body='{"scenario": "Black Hole"}')))
    cases.append(case("unauthorized next", request("POST", "/v1/condition/next")))
    cases.append(case("unauthorized next on lo", request("POST", "/v1/conditions/lo/next", body='{"x": 1}')))
    # Peers by host name: refused before any lookup; a read of one looks nothing up either.
    cases.append(case("unauthorized activate on a host name",
                      request("PUT", "/v1/conditions/lo%40api.example.com%3A443", body='{"profile": "Black Hole"}')))
    cases.append(case("unauthorized lease on a host name",
                      request("POST", "/v1/leases", body='{"profile": "Black Hole", "condition": "@api.example.com:443"}')))
    cases.append(case("unauthorized off on a host name", request("DELETE", "/v1/conditions/%40api.example.com")))
    cases.append(case("read of a host name's condition", request("GET", "/v1/conditions/%40localhost%3A80"), expect="any"))
    cases.append(case("host name too long", request("PUT", "/v1/conditions/%40" + "a" * 161, body='{"profile": "Black Hole"}')))
    cases.append(case("host name with a bad label", request("PUT", "/v1/conditions/%40-x.example", body='{"profile": "Black Hole"}')))
    # Sandboxes: of pid 1's namespace (the host's), of a made-up pid, of a container-like id.
    for body in ['{"profile": "Black Hole", "condition": "pid/1/eth0", "sandbox": true}',
                 '{"profile": "Black Hole", "condition": "pid/4194304/eth0", "sandbox": true}',
                 '{"profile": "Black Hole", "condition": "netns/x/eth0", "sandbox": true}',
                 '{"profile": "Black Hole", "sandbox": true}', '{"profile": "Black Hole", "sandbox": "yes"}']:
        cases.append(case("unauthorized sandbox lease", request("POST", "/v1/leases", body=body)))
    # Methods on every endpoint.
    for path in ENDPOINTS:
        for method in METHODS:
            readable = method == "GET" and path in READABLE
            cases.append(case("method %r %s" % (method[:10], path), request(method, path), head=method == "HEAD",
                              expect="any" if readable else "4xx"))
    # Paths.
    for path in ["/", "/v1", "/v2/status", "/v1/status/../condition", "/v1/%2e%2e/condition", "//v1//status",
                 "/v1/profiles/%", "/v1/profiles/%zz", "/v1/profiles/%00", "/v1/profiles/a%2Fb",
                 "/v1/profiles/" + "x" * 5000, "/v1/profiles/%C0%AF", "/v1/profiles/%ED%A0%80", "*", "http://x/v1/nope",
                 "/v1/status\x7f", "/v1/st\u00e4tus", "/V1/STATUS", "/v1/debug/fault", "/v1/conditionz",
                 "/v1/conditions/a%2Fb", "/v1/conditions/..", "/v1/conditions/" + "x" * 5000, "/v1/conditions/%00",
                 "/v1/conditions/eth0:1", "/v1/conditions/%C0%AF", "/v1/conditions/no-such-if", "/v1/conditions/lo/lease/x",
                 "/v1/conditions//lease", "/v1/conditions/lo%40", "/v1/conditions/lo%40999.1.1.1",
                 "/v1/conditions/lo%401.2.3.4%3A0", "/v1/conditions/%40%5B%3A%3A1", "/v1/conditions/lo%40%2A",
                 "/v1/conditions/lo%40a%40b", "/v1/conditions/lo%401.2.3.4%2F33", "/v1/conditions/%401.2.3.4%3A80%2Fsctp",
                 "/v1/conditions/%40" + "9" * 3000, "/v1/conditions/netns%2F..%2Feth0", "/v1/conditions/pid%2F0%2Feth0",
                 "/v1/conditions/pid%2F99999999999%2Feth0%401.2.3.4"]:
        cases.append(case("path %r" % path[:40], request("GET", path)))
    # Queries.
    for query in ["=", "=x", "&&&", "a=1&a=2", "%", "%zz=1", "limit=-1", "limit=1e9", "limit=999999999999999999999",
                  "limit=", "limit=%00", "force=maybe", "force=%", "a=" + "b" * 6000, "&".join("k%d=v" % i for i in range(40))]:
        path = "/v1/history?" + query if "limit" in query else "/v1/condition?" + query
        method = "GET" if "limit" in query else "DELETE"
        cases.append(case("query %r" % query[:30], request(method, path)))
        # The status ignores parameters it does not take, but not malformed ones.
        cases.append(case("status query %r" % query[:30], request("GET", "/v1/status?" + query), expect="any"))
    # Headers.
    cases.append(case("header without colon", b"GET /v1/status HTTP/1.1\r\nHost linkcondd\r\n\r\n"))
    cases.append(case("obsolete line folding", b"GET /v1/status HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n"))
    cases.append(case("long header", request(headers=["X-Long: " + "a" * 20000])))
    cases.append(case("many headers", request(headers=["X-%d: %d" % (i, i) for i in range(200)])))
    cases.append(case("NUL in header", b"GET /v1/status HTTP/1.1\r\nX-A: a\x00b\r\n\r\n"))
    cases.append(case("two lengths", b"PUT /v1/condition HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{\"a\":1}"))
    cases.append(case("length and chunked", b"PUT /v1/condition HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
    cases.append(case("negative length", b"PUT /v1/condition HTTP/1.1\r\nContent-Length: -5\r\n\r\n"))
    cases.append(case("huge length", b"PUT /v1/condition HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"))
    cases.append(case("unknown encoding", b"PUT /v1/condition HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nxx"))
    cases.append(case("bad chunk", b"PUT /v1/condition HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"))
    cases.append(case("content-encoding gzip", request("PUT", "/v1/condition", headers=["Content-Encoding: gzip"], body=b"\x1f\x8b\x08\x00junk")))
    cases.append(case("expect 100-continue", request("PUT", "/v1/condition", headers=["Expect: 100-continue"], body='{"profile":"x"}')))
    cases.append(case("upgrade ignored", request(headers=["Connection: Upgrade", "Upgrade: h2c"]), expect="any"))
    # Versions and non-HTTP.
    for raw in [b"GET /v1/status\r\n\r\n", b"GET /v1/status HTTP/9.9\r\n\r\n", b"GET /v1/status HTTP/1.1 extra\r\n\r\n",
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                b"\x00" * 64, bytes(range(256)), b"GET /v1/status HTTP/1.1\n\n"]:
        cases.append(case("not HTTP/1.1 %r" % raw[:12], raw))
    # Blank lines before a request are allowed (RFC 9112 2.2); alone, they are no request at all.
    cases.append(case("blank lines only", b"\r\n\r\n\r\n", expect="any"))
    # Bodies.
    bodies = ["", "{", "[]", "null", '"x"', "1", '{"profile": 3}', '{"profile": null}', '{"profile": ["a"]}',
              '{"profile": "x", "forse": true}', '{"name": "Slow Net"}', '{"profile": "\\ud800"}', '{"profile": "a\\u0000b"}',
              "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000, '{"failAtStep": 1e999}', "\xff\xfe",
              '{"profile": "Slow Net"} trailing', '{"profile": "' + "x" * 70000 + '"}', '{"profile":"x","for":"-1s"}',
              '{"profile":"x","for":"8d"}', '{"profile":"x","for":"1e400s"}', '{"profile":"x","replaceForeign":"yes"}']
    for body in bodies:
        for path, method in [("/v1/condition", "PUT"), ("/v1/leases", "POST"), ("/v1/debug/fault", "PUT")]:
            cases.append(case("body %r %s" % (body[:20], path), request(method, path, body=body.encode("utf-8", "surrogateescape"))))
    cases.append(case("body too large", request("PUT", "/v1/condition", body=b"x" * (65 * 1024))))
    # Pipelined: every answer in order, the bad ones 4xx.
    pipeline = request("GET", "/v1/nope") + request("PATCH", "/v1/status") + request("PUT", "/v1/condition", body="{")
    cases.append(case("pipelined bad requests", pipeline * 3))
    # Random mutations of well-formed requests: flipped, inserted and deleted bytes.
    seeds = [request("PUT", "/v1/condition", body='{"profile": "Black Hole"}'), request("DELETE", "/v1/condition?force=1"),
             request("POST", "/v1/leases", body='{"profile": "Nasty Net", "for": "1h"}'), request("POST", "/v1/reload"),
             request("GET", "/v1/history?limit=5"), request("GET", "/v1/profiles/Slow%20Net")]
    if scrapes:
        seeds.append(request("GET", "/metrics"))
    while len(cases) < count:
        seed = rng.choice(seeds)
        raw = bytearray(seed)
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            position = rng.randrange(len(raw))
            if kind < 0.4:
                raw[position] = rng.randrange(256)
            elif kind < 0.7:
                raw[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            else:
                del raw[position:position + rng.randint(1, 8)]
        cases.append(dict(case("mutation %d" % len(cases), bytes(raw), expect="any"), scrape=b"/metrics" in seed))
    return cases


def read_answers(sock, timeout):
    """Every response on the connection until it closes: (status, headers, body) each."""
    sock.settimeout(timeout)
    data = b""
    answers = []
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            while True:
                end = data.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = data[:end].decode("latin-1").split("\r\n")
                status = int(head[0].split(" ")[1])
                headers = {h.split(":", 1)[0].strip().lower(): h.split(":", 1)[1].strip() for h in head[1:] if ":" in h}
                length = int(headers.get("content-length", "0"))
                if len(data) < end + 4 + length:
                    break
                answers.append((status, headers, data[end + 4:end + 4 + length]))
                data = data[end + 4 + length:]
    except socket.timeout:
        return answers, "timeout"
    except (ConnectionResetError, BrokenPipeError):
        return answers, "reset"
    return answers, "closed"


def judge(c, answers, ending):
    problems = []
    if ending == "timeout":
        problems.append("no end within the time limit")
    for status, headers, body in answers:
        if c["expect"] == "4xx" and not 400 <= status < 500:
            problems.append("status %d" % status)
        if status >= 500:
            problems.append("server error %d" % status)
        text = c.get("scrape") and status == 200 and headers.get("content-type", "").startswith("text/plain")
        if not text and not headers.get("content-type", "").startswith("application/json"):
            problems.append("content type %r" % headers.get("content-type"))
        if c["head"] or status < 400:
            continue
        try:
            code = json.loads(body)["error"]["code"]
            if not code:
                problems.append("empty error code")
        except (ValueError, KeyError, TypeError):
            problems.append("body is not a JSON error: %r" % body[:60])
    if c["expect"] == "4xx" and not answers and ending != "reset":
        problems.append("no answer")
    return problems


def connect(address, timeout=None):
    """A connection to the control socket (a path) or the metrics listener (a (host, port) pair)."""
    if isinstance(address, tuple):
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    else:
        family = socket.AF_UNIX
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(address)
    return sock


def send(path, c, timeout):
    sock = connect(path, timeout)
    reset = False
    try:
        sock.sendall(c["raw"])
        sock.shutdown(socket.SHUT_WR)
    except OSError as e:
        # The server answered before reading it all and closed: TCP resets a connection closed
        # with bytes unread, and shutdown then finds it gone (ENOTCONN).
        if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
            raise
        reset = True
    answers, ending = read_answers(sock, timeout)
    sock.close()
    return answers, ("reset" if reset and ending == "closed" else ending)


def truncated(path, raw, results, index):
    """Half a request, then silence: the daemon must answer 408 (JSON) or close, within its limit."""
    started = time.monotonic()
    try:
        sock = connect(path)
        sock.sendall(raw)
    except OSError as e:
        results[index] = ([], "cannot connect: %s" % e, time.monotonic() - started)
        return
    answers, ending = read_answers(sock, 45)
    sock.close()
    results[index] = (answers, ending, time.monotonic() - started)


def main():
    p = argparse.ArgumentParser()
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--socket")
    target.add_argument("--tcp", metavar="HOST:PORT")
    p.add_argument("--count", type=int, default=3000)
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--out")
    a = p.parse_args()
    if a.tcp:
        host, _, port = a.tcp.rpartition(":")
        address = (host.strip("[]"), int(port))
    else:
        address = a.socket
    rng = random.Random(a.seed)
    cases = generate(a.count, rng, scrapes=bool(a.tcp))

    # Requests cut short run alongside the rest: each waits out the daemon's time limit.
    partials = [b"GET /v1/status HTTP/1.1\r\nHost: x\r\n", b"PUT /v1/condition HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"pro",
                b"POST /v1/leases HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"pro", b"G", b""]
    partial_results = [None] * len(partials)
    threads = [threading.Thread(target=truncated, args=(address, raw, partial_results, i)) for i, raw in enumerate(partials)]
    for t in threads:
        t.start()

    failures = []
    answered = 0
    by_status = {}
    started = time.monotonic()
    for c in cases:
        try:
            answers, ending = send(address, c, 15)
        except OSError as e:
            failures.append({"case": c["name"], "problems": ["cannot connect: %s" % e]})
            continue
        answered += len(answers)
        for status, _, _ in answers:
            by_status[str(status)] = by_status.get(str(status), 0) + 1
        problems = judge(c, answers, ending)
        if problems:
            failures.append({"case": c["name"], "problems": problems, "answers": [s for s, _, _ in answers]})
    for t in threads:
        t.join()
    for raw, result in zip(partials, partial_results):
        answers, ending, took = result
        problems = []
        if ending == "timeout":
            problems.append("still open after 45 s")
        elif ending.startswith("cannot connect"):
            problems.append(ending)
        if raw and not (len(answers) == 1 and answers[0][0] == 408):
            problems.append("expected one 408, got %s" % [s for s, _, _ in answers])
        if not raw and answers:
            problems.append("an idle connection got an answer")
        if problems:
            failures.append({"case": "truncated %r" % raw[:20], "problems": problems, "seconds": round(took, 1)})
        by_status["408" if raw else "idle-closed"] = by_status.get("408" if raw else "idle-closed", 0) + (1 if not problems else 0)
    summary = {"requests": len(cases) + len(partials), "answers": answered, "by_status": by_status,
               "failures": len(failures), "examples": failures[:10], "seconds": round(time.monotonic() - started, 1),
               "partial_seconds": [round(r[2], 1) for r in partial_results]}
    text = json.dumps(summary, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
