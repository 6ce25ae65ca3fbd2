"""The control API against its description, docs/openapi.yaml: the description read against
docs/api.md, a TCP bridge for schemathesis (which speaks HTTP over TCP only), schemathesis run
as a program and its JSON report read, and documents validated against the description's
schemas."""

from __future__ import annotations

import json
import re
import socket
import socketserver
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml

from .system import REPO, HarnessError, run

SPEC = REPO / "docs" / "openapi.yaml"
API_MD = REPO / "docs" / "api.md"
SCHEMATHESIS = REPO / ".build" / "venv" / "bin" / "schemathesis"
METHODS = ("get", "put", "post", "delete", "patch")
#: The description's error responses and their status.
ERROR_RESPONSES = {"BadRequest": 400, "Forbidden": 403, "NotFound": 404, "RequestTimeout": 408, "Conflict": 409,
                   "Gone": 410, "PayloadTooLarge": 413, "KernelError": 500, "NotImplemented": 501,
                   "Unavailable": 503}
#: Codes api.md lists whose answers the description gives no response of their own (any path,
#: any method).
CODES_OF_EVERY_PATH = ("not-found", "method-not-allowed")


def load_spec(path: Path = SPEC) -> dict:
    with open(path, encoding="utf-8") as file:
        return yaml.safe_load(file)


def operations(spec: dict, leave_out: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    """(METHOD, PATH) of each operation the description has, but those of the paths LEAVE_OUT."""
    return {(method.upper(), path) for path, item in spec["paths"].items() if path not in leave_out
            for method in item if method in METHODS}


# ---------------------------------------------------------------- the description and api.md

@dataclass
class DocsComparison:
    endpoints: int
    only_in_openapi: list[str]
    only_in_api_md: list[str]
    codes: int
    codes_only_in_openapi: list[str]
    codes_only_in_api_md: list[str]
    codes_at_another_status: list[str]


def compare_docs(spec: dict, api_md: str) -> DocsComparison:
    """The endpoints and error codes of the description against api.md's two tables."""
    described = operations(spec)
    # | `GET`, `PUT` | `/v1/...` | ... (and `/metrics`, beside /v1 for scrapers)
    listed = set()
    for methods, path in re.findall(r"^\| ((?:`[A-Z]+`(?:, )?)+) \| `(/v1/[^`]*|/metrics)` \|", api_md, re.M):
        for method in re.findall(r"`([A-Z]+)`", methods):
            listed.add((method, path))
    # | 409 | `lease-held` | ...
    table_codes: dict[str, int] = {}
    for status, codes in re.findall(r"^\| (\d{3}) \| ((?:`[a-z-]+`(?:, )?)+) \|", api_md, re.M):
        for code in re.findall(r"`([a-z-]+)`", codes):
            table_codes[code] = int(status)
    spec_codes = set(spec["components"]["schemas"]["ErrorCode"]["enum"])
    # Each error response's description names its codes.
    named_by_status: dict[str, set[int | None]] = {}
    for name, response in spec["components"]["responses"].items():
        for code in re.findall(r"`([a-z-]+)`", response["description"]):
            named_by_status.setdefault(code, set()).add(ERROR_RESPONSES.get(name))
    wrong_status = sorted(
        f"{code}: api.md {status}, openapi.yaml {sorted(s for s in named_by_status.get(code, ()) if s)}"
        for code, status in table_codes.items()
        if status not in named_by_status.get(code, set()) and code not in CODES_OF_EVERY_PATH)
    return DocsComparison(
        endpoints=len(described),
        only_in_openapi=sorted(f"{m} {p}" for m, p in described - listed),
        only_in_api_md=sorted(f"{m} {p}" for m, p in listed - described),
        codes=len(spec_codes),
        codes_only_in_openapi=sorted(spec_codes - set(table_codes)),
        codes_only_in_api_md=sorted(set(table_codes) - spec_codes),
        codes_at_another_status=wrong_status)


def in_both(count: int, only_here: list[str], only_there: list[str]) -> str:
    """"N in both", or what is in one only."""
    if not only_here and not only_there:
        return f"{count} in both"
    return f"only in openapi.yaml: {', '.join(only_here) or '-'}; only in api.md: {', '.join(only_there) or '-'}"


# ---------------------------------------------------------------- schemas

class Validator:
    """The description's schemas by name, their $refs resolved in the description."""

    def __init__(self, spec: dict):
        self.components = spec["components"]["schemas"]
        self.validators: dict[str, Any] = {}

    def errors(self, name: str, document: Any) -> list[str]:
        if name not in self.validators:
            schema = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": self.components}}
            self.validators[name] = jsonschema_rs.Draft4Validator(schema, validate_formats=True)
        return [error.message for error in self.validators[name].iter_errors(document)]


# ---------------------------------------------------------------- a TCP bridge to the socket

class Bridge:
    """127.0.0.1:PORT -> the daemon's Unix socket, a connection of the daemon's for each TCP
    connection, bytes copied both ways until either side closes."""

    def __init__(self, unix_socket: Path):
        self.unix_socket = str(unix_socket)
        bridge = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                bridge.serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Bridge":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def serve(self, client: socket.socket) -> None:
        daemon = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            daemon.connect(self.unix_socket)
        except OSError:
            client.close()
            return
        back = threading.Thread(target=_copy, args=(daemon, client), daemon=True)
        back.start()
        _copy(client, daemon)
        back.join()
        daemon.close()


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


# ---------------------------------------------------------------- schemathesis

@dataclass
class SchemathesisRun:
    rc: int
    report: dict | None
    log: Path

    @property
    def generated(self) -> int | None:
        return (self.report or {}).get("test_cases", {}).get("generated")

    @property
    def failed_cases(self) -> int | None:
        cases = (self.report or {}).get("test_cases")
        return None if cases is None else cases.get("with_failures", 0) + cases.get("errored", 0)

    @property
    def tested(self) -> int | None:
        return (self.report or {}).get("operations", {}).get("tested")

    def failures(self) -> list[str]:
        """Each kind of failure with the operations it was seen on, and each error."""
        report = self.report or {}
        found = [f"{f.get('code')} {f.get('title')} x{f.get('count')} ({', '.join(f.get('operations', []))})"
                 for f in report.get("failures", [])]
        found += [f"error: {json.dumps(e)[:200]}" for e in report.get("errors", [])]
        return found

    def failure_details(self, lines: int = 120) -> str:
        """The FAILURES section of schemathesis's output: each failing case with its reproduction."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        match = re.search(r"^=+ FAILURES =+$(.*?)^=+ SUMMARY =+$", text, re.M | re.S)
        return "\n".join((match.group(1) if match else text).strip().splitlines()[:lines])


def run_schemathesis(spec_file: Path, url: str, work: Path, *, max_examples: int, leave_out: tuple[str, ...],
                     exclude_checks: tuple[str, ...], timeout: float = 1500) -> SchemathesisRun:
    """`schemathesis run` of every check but EXCLUDE_CHECKS on every operation but those of the
    paths LEAVE_OUT: the examples and coverage phases whole, the fuzzing phase MAX_EXAMPLES cases
    per operation. Its output in WORK/schemathesis.log, its report WORK/schemathesis.json."""
    log = work / "schemathesis.log"
    report = work / "schemathesis.json"
    report.unlink(missing_ok=True)
    argv = [SCHEMATHESIS, "run", spec_file, "--url", url, "--checks", "all",
            *[a for check in exclude_checks for a in ("--exclude-checks", check)],
            *[a for path in leave_out for a in ("--exclude-path", path)],
            "--phases", "examples,coverage,fuzzing", "--max-examples", str(max_examples), "--workers", "1",
            "--request-timeout", "30", "--no-color", "--report", "json", "--report-json-path", report]
    # In WORK: schemathesis keeps its example database and reads a configuration file where it runs.
    done = run(argv, timeout=timeout, cwd=work)
    log.write_text(done.out + done.err)
    try:
        document = json.loads(report.read_text())
    except (OSError, ValueError):
        document = None
    return SchemathesisRun(done.rc, document, log)


def spec_for(interface: str, out: Path, spec: dict | None = None) -> Path:
    """The description with its example condition id (`eth0`) replaced by INTERFACE, so that the
    examples phase reaches a real interface."""
    spec = spec or load_spec()
    spec["components"]["parameters"]["conditionID"]["example"] = interface
    with open(out, "w", encoding="utf-8") as file:
        yaml.safe_dump(spec, file, sort_keys=False)
    return out


def ndjson(body: bytes) -> list[Any]:
    """A stream's JSON lines; HarnessError on a line that is not JSON."""
    lines = []
    for line in body.decode(errors="replace").split("\n"):
        if line.strip():
            try:
                lines.append(json.loads(line))
            except ValueError:
                raise HarnessError(f"a line of the stream that is not JSON: {line[:200]!r}") from None
    return lines

