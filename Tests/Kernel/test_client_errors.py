"""The `linkcond` client against sockets and answers that are not a working linkcondd, as a user
meets them: a socket they may not use, nothing listening, an answer cut short, not HTTP, not
JSON, not the document, endless, the daemon's own refusal, and a daemon that never answers.

Each stand-in for the daemon is a small server of the test's own (harness/fake_daemon.py) on a
Unix socket in the work directory. Every case: the client fails (never exit 0, never killed at
its time limit), says in one line what is wrong naming the socket, and leaves no process behind.
A refusal the kernel makes (permission) is proved to be the kernel's: the same socket answers
root, and the stand-in accepted nothing from the refused user.

Functional: the times checked are bounds on a hang, not measurements of linkcond's speed.
"""

from __future__ import annotations

import socket

import pytest

from harness.fake_daemon import (CONDITIONS, REPLY_TIMEOUT, FakeDaemon, endless, hang_up, http, linkcond, meet, met,
                                 reply, reply_then_silence, silence)

CHECKS = 84

#: A refusal, a hang-up or a bad answer ends the client at once; it starts in about 0.2 s. Five
#: seconds is a bound on a hang, not a measurement.
QUICK = 5
#: The largest answer the client reads (ControlClient.maximumReplyBytes).
MAXIMUM_REPLY = 64 << 20


def quickly(check, name, done):
    check.at_most(f"{name}: over within {QUICK} s", round(done.seconds, 2), QUICK, "s",
                  why="a failure the client sees at once; a hang would run to the limit")


def nothing_left(check, name, done):
    check.equal(f"{name}: no process of its left behind", [], done.left)


# ---------------------------------------------------------------- the socket

def private_socket(work, kind: str) -> FakeDaemon:
    """A stand-in answering a status, on a socket only root may use: the socket's own mode
    ("socket 0600"), or a directory nobody else may enter ("directory 0700")."""
    if kind == "socket 0600":
        return FakeDaemon(work / "private.sock", reply(http(200, CONDITIONS)), mode=0o600)
    directory = work / "private"
    directory.mkdir(mode=0o700, exist_ok=True)
    directory.chmod(0o700)
    return FakeDaemon(directory / "control.sock", reply(http(200, CONDITIONS)))


@pytest.mark.checks(6)
@pytest.mark.parametrize("kind", ["socket 0600", "directory 0700"])
def test_permission_denied(check, work, kind):
    """Uid 65534 is refused by the kernel: linkcond says it may not connect, naming the socket,
    at once; root, on the same socket, gets the stand-in's status."""
    with private_socket(work, kind) as daemon:
        answered = meet(daemon.path, "status")
        check.contains(f"{kind}: root's status through it answers (the socket works)", answered.out, "eth0: off")
        accepted = daemon.accepted
        refused = meet(daemon.path, "status", user="stranger")
        check.equal(f"{kind}: the kernel refused it (the stand-in accepted nothing)", accepted, daemon.accepted)
    check.exit_status(f"{kind}: as uid 65534, status fails", refused, "nonzero")
    check.contains(f"{kind}: says permission is denied, naming the socket", refused.err,
                   f"linkcond: not allowed to connect to {daemon.path}; run linkcond with sudo")
    quickly(check, kind, refused)
    nothing_left(check, kind, refused)


@pytest.mark.checks(4)
@pytest.mark.parametrize("kind", ["regular file", "stale socket", "directory"])
def test_nothing_listens(check, work, kind):
    """Where the socket should be: a regular file, a socket nobody listens on, a directory.
    linkcond says the daemon is not running, naming the socket."""
    path = work / f"not-listening-{kind.replace(' ', '-')}"
    if kind == "regular file":
        path.write_text("not a socket\n")
    elif kind == "stale socket":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.close()
    else:
        path.mkdir()
    done = meet(path, "status")
    check.exit_status(f"{kind}: status fails", done, "nonzero")
    check.contains(f"{kind}: says linkcondd is not running, naming the socket", done.err,
                   f"linkcond: linkcondd is not running: nothing listens on {path}")
    quickly(check, kind, done)
    nothing_left(check, kind, done)


# ---------------------------------------------------------------- answers

GET = "GET /v1/conditions"
ANSWERS = {
    "cut short in the headers": (
        reply(b"HTTP/1.1 200 OK\r\nContent-Type: applic"),
        "linkcondd at {socket} hung up in the middle of its answer to " + GET),
    "cut short in the body": (
        reply(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
              b'{"conditions":[{"active":fal'),
        "linkcondd at {socket} hung up in the middle of its answer to " + GET),
    "not HTTP": (
        reply(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"),
        "what answered " + GET + " on {socket} does not speak HTTP"),
    "not JSON": (
        reply(http(200, b"<html><body>It works!</body></html>", "text/html")),
        "linkcondd at {socket} answered " + GET + " with something other than the document expected: not JSON"),
    "not the document": (
        reply(http(200, b'{"hello":"world"}')),
        "linkcondd at {socket} answered " + GET
        + " with something other than the document expected: no 'conditions' in the document"),
    "an error status without a document": (
        reply(http(502, b"Bad Gateway", "text/plain")),
        "linkcondd at {socket} answered " + GET + " with 502 and no error document"),
    "a stated size over the bound": (
        endless(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n"),
        "linkcondd at {socket} sent an answer of 100000000000 bytes to " + GET + ", more than it ever sends"),
    "a hang-up at once": (
        hang_up,
        "linkcondd at {socket} "),
}


@pytest.mark.checks(4)
@pytest.mark.parametrize("kind", list(ANSWERS))
def test_bad_answer(check, work, kind):
    """An answer that is not the daemon's: linkcond fails at once with one line saying what was
    wrong with it, naming the socket."""
    behaviour, said = ANSWERS[kind]
    with FakeDaemon(work / "bad-answer.sock", behaviour) as daemon:
        done = meet(daemon.path, "status")
    check.exit_status(f"{kind}: status fails", done, "nonzero")
    check.contains(f"{kind}: says what is wrong, naming the socket", done.err, "linkcond: " + said.format(socket=daemon.path))
    quickly(check, kind, done)
    nothing_left(check, kind, done)


@pytest.mark.checks(5)
def test_endless_answer(check, work):
    """An answer of no stated size that never ends: refused once past the client's bound, at
    once, in bounded memory (without a bound the client grew by over 1 GB in 6 s)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with FakeDaemon(work / "endless.sock", endless(head, chunked=True)) as daemon:
        done = meet(daemon.path, "status")
    check.exit_status("endless answer: status fails", done, "nonzero")
    check.contains("endless answer: says it is too large, naming the socket", done.err,
                   f"linkcond: linkcondd at {daemon.path} sent an answer over {MAXIMUM_REPLY} bytes to {GET}")
    quickly(check, "endless answer", done)
    check.at_most("endless answer: peak memory", round(done.max_rss_kib / 1024), 3 * MAXIMUM_REPLY >> 20, "MiB",
                  why="the bound, a copy being decoded and the program itself")
    nothing_left(check, "endless answer", done)


@pytest.mark.checks(4)
def test_the_daemons_refusal(check, work):
    """The daemon's own error document: its message, and the profile it suggests."""
    document = b'{"error":{"code":"unknown-profile","message":"no profile \'slow nte\'","suggestions":["Slow Net"]}}'
    with FakeDaemon(work / "refusal.sock", reply(http(404, document))) as daemon:
        done = meet(daemon.path, "activate", "slow nte")
    check.exit_status("refusal: activate fails", done, "nonzero")
    check.equal("refusal: the daemon's message and its suggestion, one line", "linkcond: no profile 'slow nte' (did you mean Slow Net?)",
                done.err.strip())
    quickly(check, "refusal", done)
    nothing_left(check, "refusal", done)


# ---------------------------------------------------------------- no answer

@pytest.mark.checks(19)
def test_never_answers(check, work):
    """A daemon that takes the request and says nothing, or stops in the middle of its answer:
    status, activate and run each give up after the client's reply timeout (30 s), saying so and
    naming the socket; run's command never runs. All four at once, on two stand-ins."""
    marker = work / "ran-under-a-silent-daemon"
    marker.unlink(missing_ok=True)
    cases = {
        "status": ("silent", ["status"], GET),
        "activate": ("silent", ["activate", "Slow Net"], "PUT /v1/condition"),
        "run": ("silent", ["run", "--profile", "Slow Net", "--", "touch", str(marker)], "POST /v1/leases"),
        "status, answer begun": ("stops", ["status"], GET),
    }
    begun = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{"
    with FakeDaemon(work / "silent.sock", silence) as silent, \
            FakeDaemon(work / "stops.sock", reply_then_silence(begun)) as stops:
        daemons = {"silent": silent, "stops": stops}
        started = {name: linkcond(daemons[which].path, *args) for name, (which, args, _) in cases.items()}
        done = {name: met(process) for name, process in started.items()}
        # The silence is the stand-ins': each request reached them whole.
        check.equal("silent: the stand-in read the three requests", 3, silent.requests)
        check.equal("answer begun: the stand-in read the request", 1, stops.requests)
    for name, (which, _, request) in cases.items():
        check.exit_status(f"{name}: fails", done[name], "nonzero")
        check.contains(f"{name}: says the daemon did not answer within 30 s, naming the socket", done[name].err,
                       f"linkcond: linkcondd at {daemons[which].path} did not answer {request} within {REPLY_TIMEOUT}.0 seconds")
        check.between(f"{name}: gives up at the reply timeout", round(done[name].seconds, 2), REPLY_TIMEOUT, REPLY_TIMEOUT + 5,
                      "s", why="not before the 30 s the client gives the daemon; 5 s for starting up on a shared CPU")
        nothing_left(check, name, done[name])
    check.true("run: the command did not run", not marker.exists(), "ran" if marker.exists() else "did not run", "did not run")
