#!/usr/bin/env python3
"""Runs a command on a fresh pseudo-terminal, as a user at a terminal would: waits for a line
of its output, types an answer, then presses Ctrl-C (the terminal's SIGINT goes to the whole
foreground process group). Prints JSON: whether the expected output was seen, the exit status
(128 + N for signal N), the output, and when Ctrl-C was pressed (`interrupted_at`, time.time()).

  tty.py --expect TEXT --answer TEXT -- COMMAND...
"""

import argparse
import json
import os
import pty
import select
import sys
import time


def read_until(fd, needle, timeout):
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if needle is not None and needle in seen:
            return seen, True
    return seen, False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expect", required=True)
    p.add_argument("--answer", required=True)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    # The command reads its answer from the terminal: typing it before it asks is what a
    # user does too, the line discipline keeps it.
    time.sleep(2)
    os.write(fd, a.answer.encode())
    output, seen = read_until(fd, a.expect.encode(), a.timeout)
    # A person presses Ctrl-C a moment later, once the command is at its next step.
    more, _ = read_until(fd, None, 1)
    output += more
    interrupted = time.time()
    os.write(fd, b"\x03")
    rest, _ = read_until(fd, None, 3)
    output += rest
    status = None
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
            status = 128 - status if status < 0 else status
            break
        time.sleep(0.1)
    if status is None:
        os.kill(pid, 9)
    json.dump({"expected_seen": seen, "status": status, "output": output.decode(errors="replace")[-2000:],
               "interrupted_at": interrupted}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
