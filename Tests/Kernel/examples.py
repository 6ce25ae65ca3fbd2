#!/usr/bin/env python3
"""Runs the examples of README.md and docs/*.md as written, so that they cannot go stale.

  examples.py [--json FILE] PAGE.md...

In each page, in order:
  ```console   every `$ COMMAND` line runs (a line ending in `\\` continues); the lines after it,
               up to the next command, are the output it must print. Output is compared line by
               line after normalizing what differs from run to run: times, numbers, user names,
               runs of spaces. `...` alone on a line stands for any number of lines, `...` inside
               a line for any text. A command must succeed, unless its comment says otherwise:
               `# refused ...` or `# fails ...` (non-zero), `# exits N`.
  ```sh        the whole block runs with bash -e and must succeed; its output is not compared.
Blocks of other kinds are not run. `<!-- example: skip (REASON) -->` on the line before a block
skips it, saying why. Commands run as the caller (root in the test VM), with bash, in the
repository's root, stdout and stderr together.
"""

import argparse
import json
import os
import re
import subprocess
import sys

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
NUMBER = re.compile(r"\d+(\.\d+)?")
USER = re.compile(r"uid <N> \([a-z_][a-z0-9_.-]*\)")
SKIP = re.compile(r"<!--\s*example:\s*skip\s*\((.+)\)\s*-->")


def normalize(line):
    line = TIME.sub("<TIME>", line.rstrip())
    line = NUMBER.sub("<N>", line)
    line = USER.sub("uid <N> (<USER>)", line)
    return re.sub(r"\s+", " ", line).strip()


def line_matches(expected, actual):
    """`...` inside an expected line stands for any text."""
    e, a = normalize(expected), normalize(actual)
    if "..." not in e:
        return e == a
    parts = [p.strip() for p in e.split("...")]
    if not a.startswith(parts[0]) or not a.endswith(parts[-1]):
        return False
    position = len(parts[0])
    for part in parts[1:-1]:
        found = a.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return len(a) - len(parts[-1]) >= position


def output_matches(expected, actual):
    """Every expected line in order; `...` alone skips any number of actual lines. Without a
    trailing `...`, the actual output must end where the expected one does."""
    actual = [line for line in actual if line.strip()]
    expected = [line for line in expected if line.strip()]
    position = 0
    skipping = False
    for line in expected:
        if line.strip() == "...":
            skipping = True
            continue
        if skipping:
            while position < len(actual) and not line_matches(line, actual[position]):
                position += 1
            if position == len(actual):
                return False, "no line like %r" % line
        elif position >= len(actual) or not line_matches(line, actual[position]):
            got = actual[position] if position < len(actual) else "(end of output)"
            return False, "expected %r, got %r" % (line, got)
        position += 1
        skipping = False
    if not skipping and position < len(actual):
        return False, "unexpected further output %r" % actual[position]
    return True, ""


def blocks(path, section=None):
    """(kind, lines, first line number, skip reason) of every fenced block in a Markdown page,
    or of those under the heading that starts with `section`."""
    lines = open(path).read().split("\n")
    found = []
    index = 0
    inside = section is None
    while index < len(lines):
        heading = re.match(r"^(#+) (.*)$", lines[index])
        if heading and section is not None:
            inside = heading.group(2).startswith(section)
        fence = re.match(r"^```(\w*)\s*$", lines[index])
        if fence and not inside:
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                index += 1
            index += 1
            continue
        if not fence:
            index += 1
            continue
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        skip = SKIP.search(previous)
        start = index
        index += 1
        body = []
        while index < len(lines) and not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        index += 1
        found.append((fence.group(1), body, start + 1, skip.group(1) if skip else None))
    return found


def console_steps(body):
    """(command, expected output lines, wanted exit status) for a console block."""
    steps = []
    index = 0
    while index < len(body):
        line = body[index]
        if not line.startswith("$ "):
            index += 1
            continue
        command = line[2:]
        while command.endswith("\\") and index + 1 < len(body):
            index += 1
            command = command[:-1] + "\n" + body[index]
        index += 1
        output = []
        while index < len(body) and not body[index].startswith("$ "):
            output.append(body[index])
            index += 1
        comment = re.search(r"\s#\s*(refused|fails|exits (\d+))\b", command)
        wanted = None if comment is None else ("nonzero" if comment.group(2) is None else int(comment.group(2)))
        steps.append((command, output, wanted))
    return steps


def run(command, timeout):
    try:
        done = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, text=True, errors="replace")
        return done.returncode, done.stdout
    except subprocess.TimeoutExpired as expired:
        return None, (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pages", nargs="+")
    p.add_argument("--json")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--section", help="run only the blocks under this heading (e.g. 'Quick start')")
    a = p.parse_args()
    results = {"commands": 0, "scripts": 0, "skipped": [], "failures": []}
    for page in a.pages:
        for kind, body, line, skip in blocks(page, a.section):
            where = "%s:%d" % (page, line)
            if kind not in ("console", "sh"):
                continue
            if skip:
                results["skipped"].append({"where": where, "why": skip})
                continue
            if kind == "sh":
                results["scripts"] += 1
                status, output = run("set -e\n" + "\n".join(body), a.timeout)
                print("%s: sh block -> exit %s" % (where, status), flush=True)
                if status != 0:
                    results["failures"].append({"where": where, "command": "\n".join(body), "problem": "exit %s" % status, "output": output[-1500:]})
                    print("    FAILED:\n%s" % "\n".join("      | " + l for l in output.split("\n")[-15:]), flush=True)
                continue
            for command, expected, wanted in console_steps(body):
                results["commands"] += 1
                status, output = run(command, a.timeout)
                print("%s: $ %s -> exit %s" % (where, command.split("\n")[0][:100], status), flush=True)
                problems = []
                if status is None:
                    problems.append("did not finish within %.0f s" % a.timeout)
                elif wanted is None and status != 0:
                    problems.append("exit %d, expected success" % status)
                elif wanted == "nonzero" and status == 0:
                    problems.append("succeeded, expected a refusal")
                elif isinstance(wanted, int) and status != wanted:
                    problems.append("exit %d, expected %d" % (status, wanted))
                ok, why = output_matches(expected, output.split("\n"))
                if not ok:
                    problems.append("output: " + why)
                if problems:
                    results["failures"].append({"where": where, "command": command, "problem": "; ".join(problems), "output": output[-1500:]})
                    print("    FAILED: %s\n%s" % ("; ".join(problems), "\n".join("      | " + l for l in output.split("\n")[-15:])), flush=True)
    summary = "examples: %d commands and %d scripts run, %d skipped, %d failed" % (
        results["commands"], results["scripts"], len(results["skipped"]), len(results["failures"]))
    print(summary)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if results["failures"] else 0)


if __name__ == "__main__":
    main()
