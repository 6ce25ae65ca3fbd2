"""The control API against its description, docs/openapi.yaml, on a running daemon.

The description's endpoints and error codes are api.md's. schemathesis sends every operation the
examples, boundary cases and generated requests the description implies (and requests it
forbids) through a TCP bridge to the daemon's socket, and checks each answer's status, content
type, headers and body against it; the daemon survives it all, stops cleanly on SIGTERM and
leaves its interface as it found it. The lease stream's lines and a scenario's answers (played,
moved on to its end, refused, played as a lease) are validated against the description's
schemas.
"""

from __future__ import annotations

import signal

import pytest

from harness import contract
from harness.profiles import scenario_directory
from harness.tc import same_as, snapshot

CHECKS = 18

#: Cases per operation in schemathesis's fuzzing phase (its examples and coverage phases are whole).
FUZZ_EXAMPLES = 20
#: The lease stream lasts as long as the lease: it is checked on its own, line by line.
LEASE_STREAM = "/v1/leases"
#: A reset needs a kernel that can destroy sockets, which User-mode Linux's cannot (every reset
#: here is a 501): test_failures validates real resets' answers on Debian's kernel, and
#: test_errors this kernel's refusal.
RESETS = ("/v1/condition/reset", "/v1/conditions/{id}/reset")
#: A capture streams until its limit or the client's end: test_packet_traces reads real ones
#: with tshark, and checks their refusals.
CAPTURES = ("/v1/condition/capture", "/v1/conditions/{id}/capture")
#: A profile's name or an interface's is any string to the description, and one that names
#: nothing is rightly a 404: schemathesis's check that every valid-looking request is accepted
#: cannot hold.
EXCLUDED_CHECKS = ("positive_data_acceptance",)


@pytest.fixture(scope="module")
def profiles(profiles):
    """The module's profiles, and the shipped scenarios beside them."""
    scenario_directory(profiles)
    return profiles


@pytest.fixture(scope="module", autouse=True)
def pristine(device):
    """The interface as it was before the daemon first started."""
    return snapshot(device)


@pytest.fixture(scope="module")
def spec():
    return contract.load_spec()


@pytest.mark.checks(3)
def test_description_matches_api_md(check, spec):
    """docs/openapi.yaml and docs/api.md describe the same endpoints and the same error codes,
    each at the same status."""
    docs = contract.compare_docs(spec, contract.API_MD.read_text())
    check.equal("endpoints: docs/openapi.yaml's are api.md's", f"{docs.endpoints} in both",
                contract.in_both(docs.endpoints, docs.only_in_openapi, docs.only_in_api_md))
    check.equal("error codes: openapi.yaml's enum is api.md's table", f"{docs.codes} in both",
                contract.in_both(docs.codes, docs.codes_only_in_openapi, docs.codes_only_in_api_md))
    check.equal("error codes: each at the status api.md gives it", "none elsewhere",
                "; ".join(docs.codes_at_another_status) or "none elsewhere")


@pytest.mark.checks(6)
def test_every_answer_as_described(check, daemon, topo, device, work, spec, pristine):
    """schemathesis's examples, coverage and fuzzing phases on every operation but the lease
    stream and the resets: each answer's status, content type, headers and body as the description says (405
    and Allow for other methods, 4xx for what it forbids, no 5xx). After it all the daemon still
    answers, exits 0 on SIGTERM and leaves the interface as before it started."""
    spec_file = contract.spec_for(topo.interface, work / "openapi.yaml", spec)
    bridge = contract.Bridge(daemon.socket).start()
    try:
        result = contract.run_schemathesis(spec_file, bridge.url, work, max_examples=FUZZ_EXAMPLES,
                                           leave_out=(LEASE_STREAM, *RESETS, *CAPTURES), exclude_checks=EXCLUDED_CHECKS)
    finally:
        bridge.stop()
    if result.failures():
        print(f"schemathesis's failures ({result.log}):\n{result.failure_details()}")
    seed = (result.report or {}).get("seed")
    expected_operations = len(contract.operations(spec, leave_out=(LEASE_STREAM, *RESETS, *CAPTURES)))
    check.equal("schemathesis: every operation but the lease stream, the resets and the captures tested", expected_operations, result.tested)
    check.at_least("schemathesis: cases generated", result.generated, 200, "cases",
                   why=f"examples + coverage + {FUZZ_EXAMPLES} fuzzed per operation; seed {seed}")
    check.equal("schemathesis: every answer as the description says", "0 failed, exit 0",
                f"{result.failed_cases} failed, exit {result.rc}" +
                (f" ({'; '.join(result.failures())})" if result.failures() else ""))

    check.equal("the daemon after it all: answers GET /v1/status", 200, daemon.api.get("/v1/status").status)
    daemon.api.must(daemon.api.request("DELETE", "/v1/conditions?force=1"))
    check.equal("SIGTERM after it all: exit status", 0, daemon.stop(signal.SIGTERM))
    same_as(check, "after it all: the interface as before the daemon started", pristine, snapshot(device))


@pytest.mark.checks(3)
def test_lease_stream_as_described(check, daemon, spec):
    """POST /v1/leases for 1 s: a 200 stream of JSON lines, each a LeaseEvent, active then ended
    (expired); a refused lease is an Error with its code."""
    validator = contract.Validator(spec)
    reply = daemon.api.request("POST", LEASE_STREAM, {"profile": "Slow Net", "for": "1s"}, timeout=60)
    events = contract.ndjson(reply.body) if reply.status == 200 else []
    check.equal("POST /v1/leases: a 1 s lease's stream", "200 application/x-ndjson active:- ended:expired",
                f"{reply.status} {reply.headers.get('content-type')} " +
                " ".join(f"{e.get('event')}:{e.get('reason', '-')}" for e in events))
    invalid = [f"{e.get('event')}: {message}" for e in events for message in validator.errors("LeaseEvent", e)]
    check.equal("POST /v1/leases: each line valid against LeaseEvent", "2 lines, 0 invalid",
                f"{len(events)} lines, {len(invalid)} invalid" + (f" ({'; '.join(invalid)})" if invalid else ""))
    refusal = daemon.api.request("POST", LEASE_STREAM, {"profile": "Slow Net", "for": "-1s"})
    problems = validator.errors("Error", refusal.json)
    check.equal("POST /v1/leases with a negative time: refused, an Error as described", "400 bad-request, valid",
                f"{refusal.status} {refusal.error_code}, " + ("valid" if not problems else "; ".join(problems)))


class ScenarioWalk:
    """Requests on a daemon, each answer validated against its schema: what a scenario's step
    looks like after each (`200:STEP/STEPS` with `,finished` `,trigger` `,lease` as the status
    has them, `200:-` without a scenario, `STATUS:CODE` for an error)."""

    def __init__(self, daemon, validator: contract.Validator):
        self.api = daemon.api
        self.validator = validator
        self.invalid: list[str] = []

    def call(self, method: str, path: str, body=None, schema: str = "Condition"):
        reply = self.api.request(method, path, body)
        document = reply.json
        self.invalid += [f"{method} {path}: {m}" for m in
                         self.validator.errors(schema if reply.status == 200 else "Error", document)]
        return reply, document

    def step(self, method: str, path: str, body=None) -> str:
        reply, document = self.call(method, path, body)
        if reply.status != 200:
            return f"{reply.status}:{reply.error_code}"
        played = document.get("scenario")
        if not isinstance(played, dict):
            return "200:-"
        token = f"200:{played.get('step')}/{played.get('steps')}"
        token += ",finished" if played.get("finished") else ""
        token += ",trigger" if "trigger" in played else ""
        return token + (",lease" if "lease" in document else "")


@pytest.mark.checks(6)
def test_scenario_answers_as_described(check, daemon, topo, spec):
    """GET /v1/scenarios lists the shipped scenarios; a scenario played by its file's name, moved
    on past its last step, refused three ways, and played as a lease on the condition by id:
    each answer as the description says, and the history's reasons for it."""
    walk = ScenarioWalk(daemon, contract.Validator(spec))
    shipped = len(list(contract.REPO.joinpath("scenarios").glob("*.yaml")))
    reply, listing = walk.call("GET", "/v1/scenarios", schema="ScenarioList")
    check.equal("GET /v1/scenarios: the shipped scenarios, none skipped", f"{shipped} listed, 0 problems",
                f"{len(listing.get('scenarios', []))} listed, {len(listing.get('problems', []))} problems"
                if reply.status == 200 else f"{reply.status}")

    played = [walk.step("PUT", "/v1/condition", {"scenario": "slow-net-then-black-hole"}),
              walk.step("POST", "/v1/condition/next"), walk.step("POST", "/v1/condition/next"),
              walk.step("POST", "/v1/condition/next")]
    check.equal("a scenario played by its file's name, moved on to its end and past it",
                "200:1/2,trigger 200:2/2 200:2/2,finished 409:scenario-over", " ".join(played))
    _, history = walk.call("GET", "/v1/history?limit=200", schema="History")
    reasons = [e.get("reason") for e in history.get("entries", []) if e.get("condition") == topo.interface][-3:]
    check.equal("the history of the one played to its end", "play scenario scenario-end", " ".join(reasons))

    refused = [walk.step("DELETE", "/v1/condition?force=1"), walk.step("POST", "/v1/condition/next"),
               walk.step("PUT", "/v1/condition", {"scenario": "subwy"}),
               walk.step("PUT", "/v1/condition", {"scenario": "Subway", "profile": "Slow Net"})]
    check.equal("refused: next without a scenario, an unknown one, a scenario and a profile at once",
                "200:- 409:no-scenario 404:unknown-scenario 400:bad-request", " ".join(refused))

    condition = f"/v1/conditions/{topo.interface}"
    leased = [walk.step("PUT", condition, {"scenario": "Subway", "for": "1m"}), walk.step("POST", condition + "/next"),
              walk.step("DELETE", "/v1/lease")]
    check.equal("a scenario played as a lease on the condition by id, moved on, released",
                "200:1/2,lease 200:2/2,lease 200:-", " ".join(leased))
    check.equal("scenarios: each answer valid against the description", "0 invalid",
                f"{len(walk.invalid)} invalid" + (f" ({'; '.join(walk.invalid)})" if walk.invalid else ""))
