"""The runnable examples of README.md and docs/*.md: found in the pages, run as written, their
output compared with what the page shows.

In each page, every fenced block (``` or ~~~, any length, indented up to three spaces) is one of:
  runnable  ```console: every `$ COMMAND` line runs (a line ending in `\\` continues); the lines
            after it, up to the next command, are the output it must print, compared line by
            line after normalizing what differs from run to run (times, numbers, user names,
            runs of spaces). `...` alone on a line stands for any number of lines, `...` inside
            a line for any text. A command must succeed, unless its comment says otherwise:
            `# refused ...` or `# fails ...` (non-zero), `# exits N`.
            ```sh: the whole block runs with bash -e and must succeed; its output is not
            compared.
  skipped   any block right after `<!-- example: skip (REASON) -->` (a reason is required).
  unrun     a shell-like block the runner does not run (```bash, ```shell, ```zsh ..., or a block
            without a language, or ```text, whose lines start with `$ ` or `sudo `) and that is
            not marked: an example that silently stopped being run. A page with one fails.
  other     anything else (YAML, Swift, a diagram, an error message): not a command.
Commands run as the caller (root in the test VM), with bash, in the repository's root, stdout
and stderr together.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .system import REPO

RUNNABLE = ("console", "sh")
#: Languages of shell commands or sessions that the runner does not run.
SHELL_LIKE = ("bash", "shell", "zsh", "ksh", "fish", "shell-session", "shellsession", "sh-session", "bash-session",
              "console-session", "terminal", "session", "ps1", "powershell", "pwsh", "bat", "cmd")
#: A block without a language, or plain text, is a command when a line starts so.
PROMPT = re.compile(r"^\s*(\$|sudo) \S")
SKIP = re.compile(r"<!--\s*example:\s*skip\s*\((.+)\)\s*-->")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
NUMBER = re.compile(r"\d+(\.\d+)?")
USER = re.compile(r"uid <N> \([a-z_][a-z0-9_.-]*\)")


def pages() -> list[Path]:
    """README.md and every page of docs/, as the repository has them."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass
class Block:
    page: Path
    line: int
    language: str
    info: str
    body: list[str]
    skip: str | None
    #: The headings the block is under, outermost first.
    sections: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def kind(self) -> str:
        """runnable, skipped, unrun or other (see the module's doc comment)."""
        if self.skip:
            return "skipped"
        if self.language in RUNNABLE:
            return "runnable"
        if self.language in SHELL_LIKE:
            return "unrun"
        if self.language in ("", "text", "txt", "plain", "plaintext") and any(PROMPT.match(l) for l in self.body):
            return "unrun"
        return "other"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of PAGE, with the headings it is under."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = []
    headings: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = re.match(r"^ {0,3}(#{1,6}) +(.*?)\s*#*\s*$", line)
        if heading:
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
        fence = FENCE.match(line)
        if not fence or (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            index += 1
            continue
        marker, info = fence.group(2), fence.group(3).strip()
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        skip = SKIP.search(previous)
        start = index
        body = []
        index += 1
        while index < len(lines):
            closing = FENCE.match(lines[index])
            if (closing and closing.group(2)[0] == marker[0] and len(closing.group(2)) >= len(marker)
                    and not closing.group(3).strip()):
                break
            body.append(lines[index])
            index += 1
        index += 1
        language = info.split()[0].lower() if info else ""
        found.append(Block(page, start + 1, language, info, body, skip.group(1).strip() if skip else None,
                           tuple(title for _, title in headings)))
    return found


def runnable(page: Path, section: str | None = None) -> list[Block]:
    """PAGE's runnable blocks (those under a heading that starts with SECTION, if given)."""
    return [b for b in blocks(page) if b.kind == "runnable"
            and (section is None or any(title.startswith(section) for title in b.sections))]


# ---------------------------------------------------------------- output

def normalize(line: str) -> str:
    line = TIME.sub("<TIME>", line.rstrip())
    line = NUMBER.sub("<N>", line)
    line = USER.sub("uid <N> (<USER>)", line)
    return re.sub(r"\s+", " ", line).strip()


def line_matches(expected: str, actual: str) -> bool:
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


def output_matches(expected: list[str], actual: list[str]) -> tuple[bool, str]:
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
                return False, f"no line like {line!r}"
        elif position >= len(actual) or not line_matches(line, actual[position]):
            got = actual[position] if position < len(actual) else "(end of output)"
            return False, f"expected {line!r}, got {got!r}"
        position += 1
        skipping = False
    if not skipping and position < len(actual):
        return False, f"unexpected further output {actual[position]!r}"
    return True, ""


# ---------------------------------------------------------------- running

@dataclass
class Step:
    command: str
    expected: list[str]
    wanted: int | str | None


def console_steps(body: list[str]) -> list[Step]:
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
        steps.append(Step(command, output, wanted))
    return steps


@dataclass
class Outcome:
    """What running a page's blocks did: blocks run (each ran at least one command), commands
    run, and every failure with where it is."""

    blocks_run: int = 0
    commands: int = 0
    failures: list[str] = field(default_factory=list)


def shell(command: str, timeout: float, env: dict[str, str]) -> tuple[int | None, str]:
    try:
        done = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO,
                              timeout=timeout, text=True, errors="replace", env=env, stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or ""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def run_blocks(found: list[Block], timeout: float = 120, env: dict[str, str] | None = None) -> Outcome:
    """Runs each block in order, printing each command and what went wrong."""
    env = dict(env or os.environ)
    outcome = Outcome()
    for block in found:
        if block.language == "sh":
            status, output = shell("set -e\n" + "\n".join(block.body), timeout, env)
            outcome.commands += 1
            outcome.blocks_run += 1
            print(f"{block.where}: sh block -> exit {status}", flush=True)
            if status != 0:
                _failed(outcome, block, "\n".join(block.body), f"exit {status}", output)
            continue
        steps = console_steps(block.body)
        if steps:
            outcome.blocks_run += 1
        for step in steps:
            outcome.commands += 1
            status, output = shell(step.command, timeout, env)
            print(f"{block.where}: $ {step.command.splitlines()[0][:100]} -> exit {status}", flush=True)
            problems = []
            if status is None:
                problems.append(f"did not finish within {timeout:.0f} s")
            elif step.wanted is None and status != 0:
                problems.append(f"exit {status}, expected success")
            elif step.wanted == "nonzero" and status == 0:
                problems.append("succeeded, expected a refusal")
            elif isinstance(step.wanted, int) and status != step.wanted:
                problems.append(f"exit {status}, expected {step.wanted}")
            ok, why = output_matches(step.expected, output.split("\n"))
            if not ok:
                problems.append("output: " + why)
            if problems:
                _failed(outcome, block, step.command, "; ".join(problems), output)
    return outcome


def _failed(outcome: Outcome, block: Block, command: str, problem: str, output: str) -> None:
    outcome.failures.append(f"{block.where}: `{command.splitlines()[0][:80]}`: {problem}")
    tail = "\n".join("      | " + line for line in output.split("\n")[-15:])
    print(f"    FAILED: {problem}\n{tail}", flush=True)
