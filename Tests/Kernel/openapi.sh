#!/usr/bin/env bash
# The control API against its description, docs/openapi.yaml, in a lane of the kernel suite
# (LC_LANE) that runs once the crash lanes are done, beside the condition lanes still running:
# the description's endpoints and error codes are api.md's;
# schemathesis sends every operation the examples, boundary cases and generated requests the
# description implies (and requests it forbids) to a running daemon on a real kernel, and checks
# each answer's status, content type, headers and body against it; the lease stream's lines are
# checked against their schema, and so are a scenario's answers, played, moved on to its end and
# refused; the daemon survives it all and leaves its interface as it was.
# Checks go to this lane's results file, which the suite merges.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:?set LINKCOND_BIN}
VENV=$REPO/.build/venv
SPEC=$REPO/docs/openapi.yaml
PORT=$((18080 + ${LANE:-0}))
# Examples per operation in the fuzzing phase; the examples and coverage phases are whole.
EXAMPLES=${LC_OPENAPI_EXAMPLES:-20}

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
BRIDGE_PID=""
cleanup() {
    set +e
    [[ -z $BRIDGE_PID ]] || kill "$BRIDGE_PID" 2>/dev/null
    daemon_stop TERM
    topo_down
}
trap cleanup EXIT

PROFILES="$WORK/profiles"
mkdir -p "$PROFILES"
cp "${LINKCOND_PROFILES:?set LINKCOND_PROFILES}"/*.yaml "$PROFILES/"
# The daemon reads scenarios from the directory beside its profiles: the shipped ones, so that
# GET /v1/scenarios lists them and one can be played.
SCENARIOS="$WORK/scenarios"
mkdir -p "$SCENARIOS"
cp "$REPO"/scenarios/*.yaml "$SCENARIOS/"
SHIPPED_SCENARIOS=$(ls "$SCENARIOS"/*.yaml | wc -l)
modprobe ifb numifbs=0
modprobe -a veth sch_netem sch_htb sch_ingress cls_u32 cls_flower act_mirred
topo_up

# ------------------------------------------------------------------ 31
log "31. lane $LANE: the control API against docs/openapi.yaml"
"$VENV/bin/python3" "$KDIR/openapi_check.py" docs "$SPEC" "$REPO/docs/api.md" >"$WORK/docs.json"
note "docs: $(cat "$WORK/docs.json")"
# in_both COUNT ONLY_HERE ONLY_THERE: "N in both", or what is in one only.
in_both() {
    json "$WORK/docs.json" "if (.$2 + .$3 | length) == 0 then \"\\(.$1) in both\" else \"only in openapi.yaml: \\(.$2 | join(\", \")); only in api.md: \\(.$3 | join(\", \"))\" end"
}
check_equal "endpoints: docs/openapi.yaml's are api.md's" "$(json "$WORK/docs.json" .endpoints) in both" "$(in_both endpoints only_in_openapi only_in_api_md)"
check_equal "error codes: openapi.yaml's enum is api.md's table" "$(json "$WORK/docs.json" .codes) in both" "$(in_both codes codes_only_in_openapi codes_only_in_api_md)"
check_equal "error codes: each at the status api.md gives it" "none elsewhere" \
    "$(json "$WORK/docs.json" 'if (.codes_at_another_status | length) == 0 then "none elsewhere" else (.codes_at_another_status | join("; ")) end')"

snapshot "$WORK/snap.before"
daemon_start
"$VENV/bin/python3" "$KDIR/openapi_check.py" lane-spec "$SPEC" "$WORK/openapi.yaml" "$IF_C"
"$VENV/bin/python3" "$KDIR/openapi_check.py" bridge --unix "$SOCK" --port "$PORT" >"$WORK/bridge.log" 2>&1 &
BRIDGE_PID=$!
for _ in $(seq 100); do timeout 5 curl -sf "http://127.0.0.1:$PORT/v1/status" >/dev/null 2>&1 && break; snooze 0.2; done

# POST /v1/leases answers with a stream that lasts as long as the lease: it is checked below,
# line by line. positive_data_acceptance is left out: a profile's name or an interface's is any
# string to the description, and one that names nothing is rightly a 404.
st_rc=0
(cd "$WORK" && timeout 1200 "$VENV/bin/schemathesis" run "$WORK/openapi.yaml" --url "http://127.0.0.1:$PORT" \
    --checks all --exclude-checks positive_data_acceptance --exclude-path /v1/leases \
    --phases examples,coverage,fuzzing --max-examples "$EXAMPLES" --workers 1 --request-timeout 30 \
    --no-color >"$WORK/schemathesis.log" 2>&1) || st_rc=$?
awk '/^=+ FAILURES =+$/ { on = 1 } /^=+ SUMMARY =+$/ { on = 0 } on && shown++ < 120 { print "      " $0 }' "$WORK/schemathesis.log"
cases=$(grep -A1 '^Test cases:' "$WORK/schemathesis.log" | tail -n 1 | sed 's/^ *//')
tested=$(grep -m1 '^ *Tested:' "$WORK/schemathesis.log" | sed 's/^ *Tested: *//')
seed=$(grep -m1 '^Seed:' "$WORK/schemathesis.log" | sed 's/^Seed: *//')
note "schemathesis: ${cases:-no summary} (seed ${seed:-?}); log $WORK/schemathesis.log"
# What the description has: each method of each path, but the lease stream's.
operations=$("$VENV/bin/python3" -c 'import sys, yaml
paths = yaml.safe_load(open(sys.argv[1]))["paths"]
print(sum(1 for path, item in paths.items() if path != "/v1/leases" for method in item if method in ("get", "put", "post", "delete", "patch")))' "$WORK/openapi.yaml")
check_equal "schemathesis: every operation but the lease stream tested" "$operations" "${tested:-none (see the log)}"
st=FAIL
[[ $st_rc == 0 && $cases =~ ^([0-9]+)\ generated,\ ([0-9]+)\ passed$ ]] &&
    ((BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[1] >= 200)) && st=PASS
record "schemathesis: every answer as the description says (status, content type, headers, body; 405 and Allow for other methods; 4xx for what it forbids)" \
    ">= 200 cases, all passed" "${cases:-none} (exit $st_rc)" "exact" "$st"

"$VENV/bin/python3" "$KDIR/openapi_check.py" lease "$SPEC" "$SOCK" "Slow Net" >"$WORK/lease.json" || true
note "lease stream: $(cat "$WORK/lease.json")"
check_equal "POST /v1/leases: a 1 s lease's stream" "200 application/x-ndjson active:- ended:expired" \
    "$(json "$WORK/lease.json" '"\(.status) \(.content_type) \(.events | join(" "))"')"
check_equal "POST /v1/leases: each line, and a refusal, valid against the description" "0 invalid; refusal 400 bad-request" \
    "$(json "$WORK/lease.json" '"\(.invalid | length) invalid\(if (.invalid | length) > 0 then " (" + (.invalid | join("; ")) + ")" else "" end); refusal \(.refused)"')"

# A scenario played by its file's name, moved on past its last step, then refusals (nothing plays,
# an unknown name, a scenario and a profile at once), then one played as a lease on the condition
# by id, moved on and released: 200:STEP/STEPS with what the status has, or STATUS:CODE.
"$VENV/bin/python3" "$KDIR/openapi_check.py" scenario "$SPEC" "$SOCK" "$IF_C" >"$WORK/scenario.json" || true
note "scenarios: $(cat "$WORK/scenario.json")"
check_equal "GET /v1/scenarios: the shipped scenarios, none skipped" "$SHIPPED_SCENARIOS listed, 0 problems" "$(json "$WORK/scenario.json" .listed)"
check_equal "scenarios: played, moved on to the end, refused, played as a lease" \
    "200:1/2,trigger 200:2/2 200:2/2,finished 409:scenario-over 200:- 409:no-scenario 404:unknown-scenario 400:bad-request 200:1/2,lease 200:2/2,lease 200:-" \
    "$(json "$WORK/scenario.json" '.flow | join(" ")')"
check_equal "scenarios: the history of the one played to its end" "play scenario scenario-end" "$(json "$WORK/scenario.json" '.history | join(" ")')"
check_equal "scenarios: each answer valid against the description" "0 invalid" \
    "$(json "$WORK/scenario.json" '"\(.invalid | length) invalid\(if (.invalid | length) > 0 then " (" + (.invalid | join("; ")) + ")" else "" end)"')"

alive=$(kill -0 "$DAEMON_PID" 2>/dev/null && timeout 10 curl -sf --unix-socket "$SOCK" http://linkcond/v1/status >/dev/null && echo answering || echo gone)
check_equal "the daemon after it all" answering "$alive"
timeout 60 curl -s --unix-socket "$SOCK" -X DELETE 'http://linkcond/v1/conditions?force=1' >/dev/null || true
daemon_stop TERM
check_rc "SIGTERM after it all: exit status" "$DAEMON_RC" 0 "exit 0"
check_snapshot "after it all: the interface as before" "$WORK/snap.before"
