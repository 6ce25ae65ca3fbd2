#!/usr/bin/env python3
"""docs/openapi.yaml against the daemon and against docs/api.md, for Tests/Kernel/openapi.sh.

  bridge --unix SOCK --port PORT      serve the daemon's Unix socket on 127.0.0.1:PORT, one
                                      connection for each, so that a TCP-only HTTP tester
                                      (schemathesis) reaches it
  docs SPEC API_MD                    the endpoints and error codes of the description and of
                                      api.md's tables are the same sets
  lane-spec SPEC OUT INTERFACE        the description with the example interface (`eth0`) replaced
                                      by the lane's, so that the examples phase reaches a real one
  lease SPEC SOCK PROFILE             POST /v1/leases: each line of a 1 s lease's stream, and a
                                      refused lease's error, are valid against the description
  scenario SPEC SOCK INTERFACE        GET /v1/scenarios, a scenario played (PUT), moved on to its
                                      end (POST .../next), refused, and played as a lease: each
                                      answer valid against the description, and the history's
                                      reasons for it

Each subcommand but bridge prints one JSON object with what it found.
"""

import argparse
import asyncio
import json
import re
import socket
import sys
import urllib.parse

import jsonschema_rs
import yaml


def bridge(args):
    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            try:
                writer.write_eof()
            except (OSError, RuntimeError):
                writer.close()

    async def serve(client_reader, client_writer):
        try:
            daemon_reader, daemon_writer = await asyncio.open_unix_connection(args.unix)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, daemon_writer), pipe(daemon_reader, client_writer))
        client_writer.close()
        daemon_writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", args.port)
        print(f"bridge: 127.0.0.1:{args.port} -> {args.unix}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def load(path):
    with open(path, encoding="utf-8") as file:
        return yaml.safe_load(file)


def docs(args):
    spec = load(args.spec)
    text = open(args.api_md, encoding="utf-8").read()
    described = {
        (method.upper(), path)
        for path, item in spec["paths"].items()
        for method in item
        if method in ("get", "put", "post", "delete", "patch")
    }
    # api.md's endpoint table: | `GET`, `PUT` | `/v1/...` | ... (and `/metrics`, beside /v1 for scrapers)
    listed = set()
    for methods, path in re.findall(r"^\| ((?:`[A-Z]+`(?:, )?)+) \| `(/v1/[^`]*|/metrics)` \|", text, re.M):
        for method in re.findall(r"`([A-Z]+)`", methods):
            listed.add((method, path))
    # api.md's error table: | 409 | `lease-held` | ...
    table_codes = {}
    for status, codes in re.findall(r"^\| (\d{3}) \| ((?:`[a-z-]+`(?:, )?)+) \|", text, re.M):
        for code in re.findall(r"`([a-z-]+)`", codes):
            table_codes[code] = int(status)
    spec_codes = set(spec["components"]["schemas"]["ErrorCode"]["enum"])
    # Each response's description names its codes: a code's status in api.md must be one whose
    # response in the description names it.
    named_by_status = {}
    for name, response in spec["components"]["responses"].items():
        status = {"BadRequest": 400, "Forbidden": 403, "NotFound": 404, "RequestTimeout": 408, "Conflict": 409,
                  "Gone": 410, "PayloadTooLarge": 413, "KernelError": 500, "NotImplemented": 501,
                  "Unavailable": 503}.get(name)
        for code in re.findall(r"`([a-z-]+)`", response["description"]):
            named_by_status.setdefault(code, set()).add(status)
    wrong_status = sorted(
        f"{code}: api.md {status}, openapi.yaml {sorted(named_by_status.get(code, []))}"
        for code, status in table_codes.items()
        if status not in named_by_status.get(code, set()) and code not in ("not-found", "method-not-allowed")
    )
    print(json.dumps({
        "endpoints": len(described),
        "only_in_openapi": sorted(f"{m} {p}" for m, p in described - listed),
        "only_in_api_md": sorted(f"{m} {p}" for m, p in listed - described),
        "codes": len(spec_codes),
        "codes_only_in_openapi": sorted(spec_codes - set(table_codes)),
        "codes_only_in_api_md": sorted(set(table_codes) - spec_codes),
        "codes_at_another_status": wrong_status,
    }))


def lane_spec(args):
    spec = load(args.spec)
    spec["components"]["parameters"]["conditionID"]["example"] = args.interface
    with open(args.out, "w", encoding="utf-8") as file:
        yaml.safe_dump(spec, file, sort_keys=False)


def schema_validator(spec, name):
    """A validator for one of the description's schemas, its $refs resolved in the description."""
    components = spec["components"]["schemas"]
    schema = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": components}}
    return jsonschema_rs.Draft4Validator(schema, validate_formats=True)


def request(sock_path, method, path, body, read_until_close=True, close=False):
    """One HTTP/1.1 exchange on the Unix socket: (status, content type, body lines); no body
    when `body` is None. With `close`, the request asks the daemon to close the connection after
    its answer, which otherwise stays open until the daemon's idle timeout."""
    payload = b"" if body is None else json.dumps(body).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(sock_path)
        conn.sendall(
            (f"{method} {path} HTTP/1.1\r\nHost: linkcond\r\nContent-Type: application/json\r\n"
             + ("Connection: close\r\n" if close else "")
             + f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
        )
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body_bytes = b""
        while rest:
            size_text, _, rest = rest.partition(b"\r\n")
            size = int(size_text, 16)
            if size == 0:
                break
            body_bytes += rest[:size]
            rest = rest[size + 2:]
    else:
        body_bytes = rest
    return status, headers.get("content-type", ""), [line for line in body_bytes.decode().split("\n") if line.strip()]


def lease(args):
    spec = load(args.spec)
    event_validator = schema_validator(spec, "LeaseEvent")
    error_validator = schema_validator(spec, "Error")
    found = {}
    status, content_type, lines = request(args.sock, "POST", "/v1/leases", {"profile": args.profile, "for": "1s"})
    found["status"] = status
    found["content_type"] = content_type
    found["events"] = []
    found["invalid"] = []
    if status != 200:
        error = json.loads("\n".join(lines)) if lines else {}
        found["invalid"].append(f"refused: {error.get('error', {}).get('message')}")
        lines = []
    for line in lines:
        event = json.loads(line)
        found["events"].append(f"{event.get('event')}:{event.get('reason', '-')}")
        found["invalid"] += [f"{event.get('event')}: {e.message}" for e in event_validator.iter_errors(event)]
    status, content_type, lines = request(args.sock, "POST", "/v1/leases", {"profile": args.profile, "for": "-1s"})
    error = json.loads("\n".join(lines)) if lines else {}
    found["refused"] = f"{status} {error.get('error', {}).get('code')}"
    found["invalid"] += [f"refusal: {e.message}" for e in error_validator.iter_errors(error)]
    print(json.dumps(found))


def scenario(args):
    spec = load(args.spec)
    validators = {name: schema_validator(spec, name) for name in ("ScenarioList", "Condition", "History", "Error")}
    found = {"invalid": [], "flow": []}

    def call(method, path, body=None, schema="Condition"):
        status, _, lines = request(args.sock, method, path, body, close=True)
        try:
            document = json.loads("\n".join(lines)) if lines else {}
        except ValueError:
            found["invalid"].append(f"{method} {path}: not JSON")
            return status, {}
        validator = validators[schema if status == 200 else "Error"]
        found["invalid"] += [f"{method} {path}: {e.message}" for e in validator.iter_errors(document)]
        return status, document

    # 200:STEP/STEPS, then ,finished ,trigger ,lease as the status has them; 200:- without a
    # scenario; STATUS:CODE for an error.
    def step(method, path, body=None):
        status, document = call(method, path, body)
        if status != 200:
            token = f"{status}:{document.get('error', {}).get('code')}"
        elif not isinstance(document.get("scenario"), dict):
            token = "200:-"
        else:
            played = document["scenario"]
            token = f"200:{played.get('step')}/{played.get('steps')}"
            token += ",finished" if played.get("finished") else ""
            token += ",trigger" if "trigger" in played else ""
            token += ",lease" if "lease" in document else ""
        found["flow"].append(token)

    status, listing = call("GET", "/v1/scenarios", schema="ScenarioList")
    found["listed"] = f"{len(listing.get('scenarios', []))} listed, {len(listing.get('problems', []))} problems" if status == 200 else f"{status}"
    condition = "/v1/conditions/" + urllib.parse.quote(args.interface, safe="")
    # By its file's name; `force`, in case what ran before left a lease.
    step("PUT", "/v1/condition", {"scenario": "slow-net-then-black-hole", "force": True})
    step("POST", "/v1/condition/next")
    step("POST", "/v1/condition/next")
    step("POST", "/v1/condition/next")
    status, history = call("GET", "/v1/history?limit=200", schema="History")
    found["history"] = [entry.get("reason") for entry in history.get("entries", []) if entry.get("condition") == args.interface][-3:]
    step("DELETE", "/v1/condition?force=1")
    step("POST", condition + "/next")
    step("PUT", "/v1/condition", {"scenario": "subwy"})
    step("PUT", "/v1/condition", {"scenario": "Subway", "profile": "Slow Net"})
    step("PUT", condition, {"scenario": "Subway", "for": "1m"})
    step("POST", condition + "/next")
    step("DELETE", "/v1/lease")
    print(json.dumps(found))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("bridge")
    p.add_argument("--unix", required=True)
    p.add_argument("--port", type=int, required=True)
    p = sub.add_parser("docs")
    p.add_argument("spec")
    p.add_argument("api_md")
    p = sub.add_parser("lane-spec")
    p.add_argument("spec")
    p.add_argument("out")
    p.add_argument("interface")
    p = sub.add_parser("lease")
    p.add_argument("spec")
    p.add_argument("sock")
    p.add_argument("profile")
    p = sub.add_parser("scenario")
    p.add_argument("spec")
    p.add_argument("sock")
    p.add_argument("interface")
    args = parser.parse_args()
    {"bridge": bridge, "docs": docs, "lane-spec": lane_spec, "lease": lease, "scenario": scenario}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
